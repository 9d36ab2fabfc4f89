"""White-box forwards of the ``hf:`` backend: the cached prompt prefix, padded batches, attention masks.

The shared prompt prefix (in-context exemplars) is encoded once and its KV cache reused for every generation,
forward and backward pass (:class:`PrefixCache`); rows of different length are left-padded *after* the prefix (a
hole in the attention mask) so one cached prefix serves the whole batch (:meth:`HFForwards._padded`).
:class:`HFForwards` is the part of :class:`~robusteval.models.hf.HFBackend` that does this; the backend's
``__init__`` sets the attributes declared here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch


def cache_argument(model: Any) -> str:
    """The name the model's forward takes its KV cache under.

    transformers 5.24 renamed ``past_key_values`` to ``cache`` (the old name still works with a warning and is
    announced to go in 5.40); earlier releases only know ``past_key_values``.
    """
    import inspect

    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def returned_cache(output: Any) -> Any:
    """The KV cache a forward returned, under either name (see :func:`cache_argument`)."""
    if "cache" in getattr(output, "__dataclass_fields__", {}):
        return output.cache
    return output.past_key_values


@dataclass
class PrefixCache:
    """The KV cache of a token prefix shared by many inputs. Never mutated: every use takes a fork."""

    ids: list[int]
    cache: Any  # transformers DynamicCache

    @property
    def length(self) -> int:
        return len(self.ids)

    def fork(self, batch_size: int) -> Any:
        cache = copy.deepcopy(self.cache)
        if batch_size > 1:
            cache.batch_repeat_interleave(batch_size)
        return cache


@dataclass
class PaddedBatch:
    """Rows after one shared prefix, left-padded after it (:meth:`HFForwards._padded`)."""

    prefix: PrefixCache | None  # the cached prefix (forked by whoever feeds the batch), None when not cached
    embeds: torch.Tensor  # [B, T, H]: the uncached prefix ids (when not cached), the padding, the suffixes
    mask: torch.Tensor  # [B, P + T] long: 0 on the padding
    positions: torch.Tensor  # [B, T]: positions of the fed inputs, skipping the padding
    key_positions: torch.Tensor  # [B, P + T]: positions of every key (cached prefix included)
    next_pos: torch.Tensor  # [B]: the position of each row's first generated token
    lengths: list[int]  # each row's suffix length


def mask_budget(device: torch.device | str) -> int:
    """Elements (rows x queries x keys) the attention mask of one forward may have.

    transformers expands a 2-D padding mask to a [B, 1, Q, K] boolean mask whenever it cannot leave causality to
    SDPA's ``is_causal`` (a cached prefix, a padding hole), and torch's CPU SDPA turns that into a float mask of
    the same shape: 5 bytes per element, quadratic in the prompt. Callers split rows so each forward's mask fits
    (:meth:`HFForwards.rows_per_forward`); a row that alone does not fit is fed without its cached prefix, which
    leaves no mask at all (:meth:`HFForwards._padded`). 64 Mi elements (320 MiB) on a GPU, 1 Mi (5 MiB) on a
    CPU, where every pass over the mask is memory traffic (rows of ~100 tokens after 600 of exemplars still go
    14 to a forward there)."""
    return 1 << 26 if torch.device(device).type == "cuda" else 1 << 20


class HFForwards:
    """Embeddings, the prefix cache, padded batches and the white-box forward of an ``hf:`` model."""

    # Set by HFBackend.__init__.
    model: Any
    tokenizer: Any
    device: torch.device
    batch_size: int
    use_prefix_cache: bool
    sliding_window: int
    attention: str
    explicit_masks: bool
    additive_masks: bool
    exact_batching_only: bool
    mask_budget: int
    #: --max-memory in bytes (None: the memory there is): attack batches and scoring chunks are planned under it.
    max_memory: int | None = None
    _cache_kwarg: str
    _prefixes: dict[tuple[int, ...], PrefixCache]

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def embedding_layer(self) -> torch.nn.Module:
        return self.model.get_input_embeddings()

    @property
    def embedding_matrix(self) -> torch.Tensor:
        # nn.Module's __getattr__ is typed Tensor | Module; an embedding's weight is a Tensor (a Parameter).
        return cast(torch.Tensor, self.embedding_layer.weight)

    @property
    def embed_scale(self) -> float:
        """Some models (Gemma) scale embeddings inside the embedding module; one-hot paths must match it."""
        scale = getattr(self.embedding_layer, "embed_scale", 1.0)
        return float(scale.item() if isinstance(scale, torch.Tensor) else scale)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding_layer(ids.to(self.device))

    @torch.no_grad()
    def prefix_cache(self, prefix_ids: Sequence[int]) -> PrefixCache:
        """Encode ``prefix_ids`` once; later calls with the same ids return the stored cache."""
        key = tuple(prefix_ids)
        found = self._prefixes.get(key)
        if found is not None:
            return found
        from transformers import DynamicCache

        # A plain DynamicCache keeps every position, so sliding-window layers stay exact when forked.
        cache = DynamicCache()
        if key:
            ids = torch.tensor([list(key)], device=self.device)
            self.model(input_ids=ids, use_cache=True, **{self._cache_kwarg: cache})
        entry = PrefixCache(list(key), cache)
        if len(self._prefixes) >= 8:  # a run uses one or two prefixes; keep memory bounded anyway
            self._prefixes.pop(next(iter(self._prefixes)))
        self._prefixes[key] = entry
        return entry

    # ------------------------------------------------------------------ padded batches
    def _padded(self, prefix_ids: Sequence[int],
                suffixes: Sequence[Sequence[int]] | Sequence[torch.Tensor] | torch.Tensor) -> PaddedBatch:
        """Rows of token ids or embeddings [L_i, H] after one shared prefix, left-padded *after* the prefix.

        The padding is a hole in the attention mask and the positions skip it, so every row sees exactly the
        positions it would see alone; all rows end in the last column.

        Rows of one length whose attention mask would exceed :attr:`mask_budget` (callers split batches with
        :meth:`rows_per_forward`, so this is one long row) are fed with the prefix re-encoded in front instead of
        from its cache, when SDPA serves the model and the rows are at least as long as the prefix (so at most
        doubling the work): without a cache offset or a hole, transformers leaves causality to SDPA's
        ``is_causal`` and builds no [Q, K] mask, so memory grows with the KV cache, not with its square.
        """
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        if isinstance(suffixes, torch.Tensor) or (suffixes and isinstance(suffixes[0], torch.Tensor)):
            rows = [row.to(self.device, self.dtype) for row in cast(Sequence[torch.Tensor], suffixes)]
            lengths = [row.shape[0] for row in rows]
            width = max(lengths)
            if min(lengths) == width:
                embeds = torch.stack(rows)
            else:  # the pad embedding fills the holes, as for token rows (never attended to)
                pad = self.embed(torch.tensor([pad_id], device=self.device))[0].detach()
                embeds = torch.stack([torch.cat([pad.expand(width - row.shape[0], -1), row]) for row in rows])
        else:
            lengths = [len(s) for s in suffixes]
            width = max(lengths)
            padded = [[pad_id] * (width - len(s)) + list(s) for s in suffixes]
            embeds = self.embed(torch.tensor(padded, device=self.device))
        batch = len(lengths)
        prefix: PrefixCache | None = None
        rest: list[int] = list(prefix_ids)
        if self.use_prefix_cache and prefix_ids and not self._inline_prefix(len(prefix_ids), lengths):
            prefix, rest = self.prefix_cache(prefix_ids), []
        if rest:
            head = self.embed(torch.tensor([rest], device=self.device)).expand(batch, -1, -1)
            embeds = torch.cat([head, embeds], dim=1)
        past_len = prefix.length if prefix is not None else 0
        start = len(rest) if rest else past_len  # the position of every row's first suffix token
        # Mask over [cached prefix | rest | left padding | suffix].
        mask = torch.ones(batch, past_len + embeds.shape[1], dtype=torch.long, device=self.device)
        positions = torch.zeros(batch, embeds.shape[1], dtype=torch.long, device=self.device)
        if rest:
            positions[:, : len(rest)] = torch.arange(len(rest), device=self.device)
        for row, length in enumerate(lengths):
            mask[row, past_len + len(rest) : past_len + len(rest) + width - length] = 0
            positions[row, embeds.shape[1] - length :] = torch.arange(start, start + length, device=self.device)
        key_positions = positions if prefix is None else torch.cat(
            [torch.arange(past_len, device=self.device).expand(batch, -1), positions], dim=1)
        next_pos = torch.tensor([start + length for length in lengths], device=self.device)
        return PaddedBatch(prefix, embeds, mask, positions, key_positions, next_pos, lengths)

    def rows_per_forward(self, prefix_len: int, width: int) -> int:
        """Rows of ``width`` tokens after a prefix of ``prefix_len`` that one forward may take so that its
        attention mask ([rows, width, prefix + width]) fits :attr:`mask_budget`; at least 1."""
        return max(1, self.mask_budget // max(1, width * (prefix_len + width)))

    def _row_chunks(self, prefix_len: int, widths: Sequence[int], items: Sequence[Any], *,
                    limit: int | None = None) -> list[list[Any]]:
        """Consecutive ``items`` (rows of ``widths`` tokens after one prefix) in chunks of at most ``limit`` rows
        (default ``batch_size``; 0: no limit) whose padded attention mask fits :attr:`mask_budget` (one row always
        goes)."""
        limit = self.batch_size if limit is None else limit or len(items)
        chunks: list[list[Any]] = []
        chunk: list[Any] = []
        widest = 0
        for item, width in zip(items, widths, strict=True):
            wider = max(widest, width)
            if chunk and (len(chunk) >= limit or len(chunk) + 1 > self.rows_per_forward(prefix_len, wider)):
                chunks.append(chunk)
                chunk, wider = [], width
            chunk.append(item)
            widest = wider
        if chunk:
            chunks.append(chunk)
        return chunks

    def _inline_prefix(self, prefix_len: int, lengths: Sequence[int]) -> bool:
        """Whether :meth:`_padded` feeds the prefix inline rather than from its cache (see there)."""
        width = max(lengths)
        return (self.attention == "sdpa" and not self.explicit_masks and min(lengths) == width
                and width >= prefix_len and len(lengths) * width * (prefix_len + width) > self.mask_budget)

    # ------------------------------------------------------------------ forward (white-box)
    def forward(
        self,
        prefix_ids: Sequence[int],
        suffix_embeds: torch.Tensor | Sequence[torch.Tensor],
        logits_to_keep: int = 0,
    ) -> torch.Tensor:
        """Logits for the suffix positions given input *embeddings* after a shared prefix.

        ``suffix_embeds`` is [B, L, H], or a list of rows [L_i, H] of different lengths (left-padded after the
        prefix, see :meth:`_padded`: row i's own positions are its last L_i). Gradients flow to the embeddings;
        the prefix comes from the cache (or is re-encoded when the cache is off), so each call costs a forward
        over the suffixes only. ``logits_to_keep=m`` returns only the last m positions' logits (the LM head over
        a large vocabulary dominates memory otherwise). Rows whose attention mask together would exceed
        :attr:`mask_budget` go through several forwards (callers that size their own batches never hit this).
        """
        rows = list(suffix_embeds)
        lengths = [row.shape[0] for row in rows]
        chunks = self._row_chunks(len(prefix_ids), lengths, list(range(len(rows))), limit=0)
        if len(chunks) > 1:
            keep = logits_to_keep or max(lengths)
            parts = [self.forward(prefix_ids, [rows[i] for i in chunk], keep) for chunk in chunks]
            # A part of short rows may return fewer than ``keep`` positions: left-pad it (before its rows' own).
            return torch.cat([torch.nn.functional.pad(part, (0, 0, keep - part.shape[1], 0)) for part in parts])
        batch = self._padded(prefix_ids, suffix_embeds)
        keep = logits_to_keep or max(batch.lengths)
        past = batch.prefix.fork(len(batch.lengths)) if batch.prefix is not None else None
        out = self.model(
            inputs_embeds=batch.embeds,
            **{self._cache_kwarg: past},
            position_ids=batch.positions,
            attention_mask=self._attention(batch.mask, batch.key_positions, batch.embeds.shape[1]),
            use_cache=past is not None,
            logits_to_keep=keep,
        )
        return out.logits[:, -keep:, :]

    def _attention(self, mask: torch.Tensor, key_positions: torch.Tensor, query_len: int) -> Any:
        """The 2-D padding mask, or for sliding-window models exact 4-D masks per layer type.

        ``mask`` [B, K] marks real keys; ``key_positions`` [B, K] their positions; the queries are the last
        ``query_len`` keys. Causality is by index, the window by position (holes don't shift it).
        """
        if not self.explicit_masks:
            return mask
        keys = mask.shape[1]
        query_index = torch.arange(keys - query_len, keys, device=self.device)
        causal = torch.arange(keys, device=self.device)[None, :] <= query_index[:, None]  # [Q, K]
        valid = causal[None] & mask.bool()[:, None, :]
        # A padding query sees at least itself, so no softmax row is empty.
        valid[:, torch.arange(query_len), query_index] = True
        # key > query - window, compared directly: a [B, Q, K] distance would be int64, 8 bytes per element.
        oldest = key_positions[:, -query_len:, None] - self.sliding_window
        sliding = valid & (key_positions[:, None, :] > oldest)
        masks = {"full_attention": valid[:, None], "sliding_attention": sliding[:, None]}
        if self.additive_masks:
            low = torch.finfo(self.dtype).min
            return {k: torch.zeros(m.shape, dtype=self.dtype, device=self.device).masked_fill(~m, low)
                    for k, m in masks.items()}
        return masks
