"""The batched decode loop of the ``hf:`` backend, and :class:`DynamicDecoder`, its step over a growing KV cache.

Generation is our own batched decode loop over the cached prompt prefix, which stops each row at its stop
strings (:mod:`robusteval.models.stops`); on a GPU its steps run over a static KV cache as one CUDA graph each
(:mod:`robusteval.models.static_decode`), elsewhere (and as the static path's fallback and reference) over a
``DynamicCache`` (:class:`DynamicDecoder`). :class:`HFDecoding` is the part of
:class:`~robusteval.models.hf.HFBackend` that decodes; the backend's ``__init__`` sets the attributes declared here.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from robusteval.errors import UserError
from robusteval.models.base import Generation, GenerationRequest
from robusteval.models.context import context_overflow
from robusteval.models.hf_forward import HFForwards, PaddedBatch, returned_cache
from robusteval.models.hf_prompts import HFPromptLayout
from robusteval.models.stops import first_stop, stopped_text
from robusteval.progress import inner_progress

if TYPE_CHECKING:
    from robusteval.models.static_decode import StaticDecoder, StaticEngine


@dataclass
class DecodedRow:
    token_ids: list[int]
    text: str
    finish_reason: str


class HFDecoding(HFPromptLayout, HFForwards):
    """Generation: requests grouped by prefix, decoded in padded batches that stop each row at its stop strings."""

    # Set by HFBackend.__init__.
    eos_ids: set[int]
    context_length: int | None
    _static: StaticEngine | None

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        encoded = [self.request_ids(r) for r in requests]
        for i, request in enumerate(requests):
            # Pipelines skip such examples before asking (models.context); a direct call is refused, never an OOM.
            line = context_overflow(self, f"request {i}", sum(map(len, encoded[i])), request.max_new_tokens, say=False)
            if line is not None:
                raise UserError(line)
        for i, request in enumerate(requests):
            groups.setdefault((tuple(encoded[i][0]), request.max_new_tokens), []).append(i)
        for (prefix_ids, max_new_tokens), indices in groups.items():
            rows = self.decode_many(
                list(prefix_ids),
                [encoded[i][1] for i in indices],
                max_new_tokens=max_new_tokens,
                temperatures=[requests[i].temperature for i in indices],
                top_ps=[requests[i].top_p for i in indices],
                stops=[requests[i].stop for i in indices],
                seeds=[requests[i].seed for i in indices],
            )
            for i, row in zip(indices, rows, strict=True):
                results[i] = Generation(row.text, row.finish_reason, len(row.token_ids))
        return [r for r in results if r is not None]

    def decode_many(
        self,
        prefix_ids: list[int],
        suffixes: Sequence[Sequence[int]] | Sequence[torch.Tensor],
        *,
        max_new_tokens: int,
        temperatures: Sequence[float] | None = None,
        top_ps: Sequence[float] | None = None,
        stops: Sequence[Sequence[str]] | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[DecodedRow]:
        """:meth:`decode_batch` over any number of rows (token-id lists or embeddings [L, H]), in batches of
        ``batch_size``, fewer where long rows' attention mask would not fit (:meth:`rows_per_forward`); same order
        out."""
        n = len(suffixes)
        per_row: dict[str, list[Any]] = {
            "temperatures": list(temperatures or [0.0] * n),
            "top_ps": list(top_ps or [1.0] * n),
            "stops": [tuple(s) for s in (stops or [()] * n)],
            "seeds": list(seeds or [None] * n),
        }
        buckets: dict[int, list[int]] = {}
        for i in range(n):
            buckets.setdefault(len(suffixes[i]) if self.exact_batching_only else 0, []).append(i)
        out: list[DecodedRow | None] = [None] * n
        chunks = [chunk for indices in buckets.values()
                  for chunk in self._row_chunks(len(prefix_ids), [len(suffixes[i]) for i in indices], indices)]
        # The progress shown counts the tokens of every row (at most max_new_tokens each) while they are generated.
        with inner_progress() as report:
            finished = 0
            for chunk in chunks:
                def on_step(step: int, base: int = finished, rows: int = len(chunk)) -> None:
                    report(base + rows * step, n * max_new_tokens, "tokens")

                rows = self.decode_batch(
                    prefix_ids,
                    [suffixes[i] for i in chunk],
                    max_new_tokens=max_new_tokens,
                    on_step=on_step,
                    **{name: [values[i] for i in chunk] for name, values in per_row.items()},
                )
                for i, row in zip(chunk, rows, strict=True):
                    out[i] = row
                finished += len(chunk) * max_new_tokens
        return [row for row in out if row is not None]

    @torch.no_grad()
    def decode_batch(
        self,
        prefix_ids: list[int],
        suffixes: Sequence[Sequence[int]] | Sequence[torch.Tensor] | torch.Tensor,
        *,
        max_new_tokens: int,
        temperatures: Sequence[float] | None = None,
        top_ps: Sequence[float] | None = None,
        stops: Sequence[Sequence[str]] | None = None,
        seeds: Sequence[int | None] | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> list[DecodedRow]:
        """Decode a batch after a shared prefix. ``suffixes`` are token-id lists, embeddings [B, L, H], or
        embedding rows [L_i, H] of different lengths. ``on_step(n)``: called after the n-th token of every row.

        Rows stop at end-of-sequence or at their first stop string (the text is cut before it).
        """
        batch = self._padded(prefix_ids, suffixes)
        size = len(batch.lengths)
        temperatures = list(temperatures or [0.0] * size)
        top_ps = list(top_ps or [1.0] * size)
        stops = [tuple(s) for s in (stops or [()] * size)]
        generators = []
        for temperature, seed in zip(temperatures, seeds or [None] * size, strict=True):
            gen = None
            if temperature > 0:
                gen = torch.Generator(device="cpu")
                # No seed means "not reproducible", never a silent seed 0 shared by every unseeded request.
                gen.manual_seed(int(seed) if seed is not None else secrets.randbits(63))
            generators.append(gen)

        decoder = self._decoder(batch, max_new_tokens)
        logits = decoder.start()
        generated: list[list[int]] = [[] for _ in range(size)]
        texts = [""] * size
        finish = [""] * size
        active = list(range(size))
        for step in range(max_new_tokens):
            chosen = self._choose(logits, temperatures, top_ps, generators)
            tokens = chosen.tolist()  # one read of the step's choices, not one per row
            for row in active:
                token = tokens[row]
                if token in self.eos_ids:
                    finish[row] = "stop"
                    continue
                generated[row].append(token)
                if stops[row]:
                    cut = stopped_text(self.decode, generated[row], stops[row])
                    if cut is not None:
                        texts[row] = cut
                        finish[row] = "stop"
            active = [row for row in active if not finish[row]]
            if on_step is not None:
                on_step(step + 1)
            if not active or step == max_new_tokens - 1:
                break
            logits = decoder.step(chosen)
        rows = []
        for row in range(size):
            if finish[row] == "stop" and texts[row]:
                text = texts[row]
            else:
                text = self.decode(generated[row])
                cut_at = first_stop(text, stops[row])
                text = text if cut_at is None else text[:cut_at]
            rows.append(DecodedRow(generated[row], text, finish[row] or "length"))
        return rows

    def _decoder(self, batch: PaddedBatch, max_new_tokens: int) -> DynamicDecoder | StaticDecoder:
        if self._static is not None and self._static.failed is None and self._static_fits(batch, max_new_tokens):
            from robusteval.models.static_decode import StaticDecoder

            return StaticDecoder(self, self._static, batch, max_new_tokens)
        return self.dynamic_decoder(batch)

    def _static_fits(self, batch: PaddedBatch, max_new_tokens: int) -> bool:
        """Whether the static path's prefill mask (rows padded to ``batch_size``, over every slot of the cache)
        fits :attr:`mask_budget`; a longer prompt decodes on the dynamic cache, where attention over its long
        KV, not kernel launches, sets the cost."""
        from robusteval.models.static_decode import row_bucket

        rows = row_bucket(len(batch.lengths), self.batch_size)
        slots = (batch.prefix.length if batch.prefix is not None else 0) + batch.embeds.shape[1] + max_new_tokens
        return rows * batch.embeds.shape[1] * slots <= self.mask_budget

    def dynamic_decoder(self, batch: PaddedBatch) -> DynamicDecoder:
        """Decoding over a growing DynamicCache: the default, and the static path's fallback and reference."""
        return DynamicDecoder(self, batch)

    def cut_at_stop(self, row: DecodedRow, stops: Sequence[str]) -> DecodedRow:
        """``row`` as if decoding had stopped at the first stop string (same text and finish reason)."""
        cut = first_stop(row.text, stops)
        if cut is None:
            return row
        ids = list(row.token_ids)
        # Keep the shortest token prefix whose text reaches the stop string, as early stopping would.
        for k in range(1, len(ids) + 1):
            if first_stop(self.decode(ids[:k]), stops) is not None:
                ids = ids[:k]
                break
        return DecodedRow(ids, row.text[:cut], "stop")

    def _choose(
        self,
        logits: torch.Tensor,
        temperatures: Sequence[float],
        top_ps: Sequence[float],
        generators: Sequence[torch.Generator | None],
    ) -> torch.Tensor:
        chosen = logits.argmax(dim=-1).cpu()
        for row, (temperature, top_p, gen) in enumerate(zip(temperatures, top_ps, generators, strict=True)):
            if temperature <= 0 or gen is None:
                continue
            probs = torch.softmax(logits[row].float().cpu() / temperature, dim=-1)
            if top_p < 1.0:
                sorted_probs, order = probs.sort(descending=True)
                keep = sorted_probs.cumsum(0) - sorted_probs < top_p
                probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
            chosen[row] = int(torch.multinomial(probs / probs.sum(), 1, generator=gen))
        return chosen


class DynamicDecoder:
    """Feeds a :class:`PaddedBatch` to the model and then one token per row per step, growing a DynamicCache
    (the prefix's cache forked per row): exact for every model, sliding-window layers included.

    A step costs what a plain transformers loop's does: one forward of one token per row. Rows without a padding
    hole (all rows of one length: every batch of one row) pass no attention mask at all, as such a loop does: a
    2-D mask of ones would be grown by a concatenation each step and read back on the host by transformers (to see
    whether it can leave causality to SDPA), a device synchronisation per step on a GPU. Rows with holes pass the
    2-D mask (or, for sliding-window models, the exact per-layer-type masks), grown by one column per step."""

    def __init__(self, backend: HFForwards, batch: PaddedBatch):
        self.backend = backend
        self.batch = batch
        size = len(batch.lengths)
        if batch.prefix is not None:
            self.past = batch.prefix.fork(size)
        else:
            # Never let the model build its own cache: a sliding-window cache keeps only the last window of
            # positions and no longer matches our full-length masks.
            from transformers import DynamicCache

            self.past = DynamicCache()
        #: Whether a mask is fed at all: only padding holes (rows of different lengths) or per-layer-type masks
        #: need one; otherwise every key is attended to causally, which is what the model does with no mask.
        self.masked = backend.explicit_masks or min(batch.lengths) < max(batch.lengths)
        self.mask = batch.mask
        self.key_positions = batch.key_positions
        self.next_pos = batch.next_pos
        self.forwards = 0  # model forwards run (start and steps; tests check one per step)

    def _run(self, **inputs: Any) -> torch.Tensor:
        backend = self.backend
        # Only the last position's logits are read: the LM head over a 128k vocabulary for every prompt position
        # would cost more than the rest of the prefill.
        out = backend.model(**inputs, **{backend._cache_kwarg: self.past}, use_cache=True, logits_to_keep=1)
        self.forwards += 1
        self.past = returned_cache(out)
        return out.logits[:, -1, :]

    def start(self) -> torch.Tensor:
        """Logits [B, V] after the whole prompt."""
        batch = self.batch
        attention = (self.backend._attention(self.mask, self.key_positions, batch.embeds.shape[1])
                     if self.masked else None)
        return self._run(inputs_embeds=batch.embeds, attention_mask=attention, position_ids=batch.positions)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [B, V] after feeding ``tokens`` [B] (one per row)."""
        backend = self.backend
        device = backend.device
        size = tokens.shape[0]
        positions = self.next_pos.view(size, 1)
        attention = None
        if self.masked:
            self.mask = torch.cat([self.mask, torch.ones(size, 1, dtype=torch.long, device=device)], dim=1)
            if backend.explicit_masks:  # only the sliding-window masks read the keys' positions
                self.key_positions = torch.cat([self.key_positions, positions], dim=1)
            attention = backend._attention(self.mask, self.key_positions, 1)
        logits = self._run(input_ids=tokens.view(size, 1).to(device), attention_mask=attention,
                           position_ids=positions)
        self.next_pos = self.next_pos + 1
        return logits
