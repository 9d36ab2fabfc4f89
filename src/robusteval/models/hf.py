"""Hugging Face transformers causal LMs: generation, scoring and white-box access.

A spec ``hf:PATH_OR_ID`` loads a local directory or a hub id; ``hf:/path/model.gguf`` reads a GGUF file,
converted once into a cache directory (``$ROBUSTEVAL_CACHE``, default ``~/.cache/robusteval``) and loaded
from there afterwards.

Speed comes from three habits:
* the shared prompt prefix (in-context exemplars) is encoded once and its KV cache reused for every
  generation, forward and backward pass (:class:`PrefixCache`);
* generation is our own batched decode loop over that cache, which stops each row at its stop strings; on a GPU
  its steps run over a static KV cache as one CUDA graph each (:mod:`robusteval.models.static_decode`);
* requests are batched; rows of different length are left-padded *after* the prefix (a hole in the
  attention mask) so one cached prefix serves the whole batch.

Chat requests (``GenerationRequest.messages``) are rendered with the tokenizer's chat template and tokenised as
one text without added special tokens (templates write BOS themselves). The cached prefix is then the earlier
turns (system prompt, exemplar question/answer pairs): they are rendered alone, and used as the prefix when the
full rendering starts with them (:meth:`HFBackend.chat_prefix_text`); the split is made on the ids of the full
text, so the cached and uncached parts always concatenate to exactly the ids of the whole conversation.
"""

from __future__ import annotations

import copy
import hashlib
import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from robusteval.errors import BackendError, UserError
from robusteval.models.base import (
    GENERATE,
    LOGPROBS,
    WHITEBOX,
    Generation,
    GenerationRequest,
    Message,
    ScoreRequest,
    freeze_messages,
)
from robusteval.models.context import context_length, context_overflow
from robusteval.models.registry import ModelSpec, check_backend_options, register_backend
from robusteval.models.tokenization import split_by_offsets, tokenize_with_offsets
from robusteval.paths import cache_root
from robusteval.progress import status

if TYPE_CHECKING:
    from robusteval.models.static_decode import StaticDecoder, StaticEngine

#: ``HFBackend(decoder=...)``: see :meth:`HFBackend._static_engine`.
DECODERS = ("auto", "static", "dynamic")

_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise UserError(f"device {device!r}: not a device; use auto, cpu, cuda, cuda:1, mps, ...") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {device!r}: no CUDA device is available to this torch build "
                        f"({torch.__version__}); use --device cpu or auto")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise UserError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    # bf16 on GPU halves memory at no accuracy cost that matters here; CPUs are fastest and exact in fp32.
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in _DTYPES:
        raise UserError(f"dtype {dtype!r}: use one of auto, {', '.join(sorted(_DTYPES))}")
    return _DTYPES[dtype]


def _unloadable(what: str, exc: Exception, advice: str) -> Exception:
    """A failure inside transformers while reading user-supplied files, as one sentence; environment failures
    (memory, disk, a missing package) pass through to the CLI's own handling."""
    from robusteval.errors import environment_error

    if environment_error(exc) is not None:
        return exc
    lines = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {lines[0][:240]}" if lines else type(exc).__name__
    return BackendError(f"{what} ({detail}); {advice}")


def convert_gguf(gguf_path: Path) -> Path:
    """Dequantise a GGUF checkpoint once into a transformers folder under the cache; return that folder."""
    import tempfile

    from robusteval.extras import require_module

    stat = gguf_path.stat()
    tag = hashlib.sha256(f"{gguf_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = cache_root() / "gguf" / f"{gguf_path.stem}-{tag}"
    if (target / "config.json").is_file() and (target / ".complete").is_file():
        return target
    # transformers reads GGUF through these two; without them it raises deep inside from_pretrained.
    require_module("gguf", purpose=f"Reading the GGUF file {gguf_path}")
    require_module("accelerate", purpose=f"Reading the GGUF file {gguf_path}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    status(f"converting {gguf_path.name} once into {target.parent} (later runs reuse it)")

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                     dtype=torch.float32)
    except Exception as exc:
        raise _unloadable(f"hf:{gguf_path}: cannot read this GGUF file", exc,
                          "the file may be truncated or corrupt (download it again), or its architecture or "
                          "quantisation is not supported by transformers' GGUF reader") from exc
    # The weights are already dequantised to fp32; the GGUF "quantizer" left on the model only blocks saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    # A private temporary folder per process: concurrent conversions never write into each other's files.
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / ".complete").write_text(str(gguf_path.resolve()) + "\n", encoding="utf-8")
        if not target.exists():  # else a concurrent conversion finished first; keep it
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return target


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
    """Rows after one shared prefix, left-padded after it (:meth:`HFBackend._padded`)."""

    prefix: PrefixCache | None  # the cached prefix (forked by whoever feeds the batch), None when not cached
    embeds: torch.Tensor  # [B, T, H]: the uncached prefix ids (when not cached), the padding, the suffixes
    mask: torch.Tensor  # [B, P + T] long: 0 on the padding
    positions: torch.Tensor  # [B, T]: positions of the fed inputs, skipping the padding
    key_positions: torch.Tensor  # [B, P + T]: positions of every key (cached prefix included)
    next_pos: torch.Tensor  # [B]: the position of each row's first generated token
    lengths: list[int]  # each row's suffix length


@dataclass
class _ScoreRow:
    """One (request, continuation) pair to score: the request's prompt ids (after its prefix) and the
    continuation's own ids."""

    request: int
    column: int
    prompt: list[int]
    ids: list[int]


def logit_budget(device: torch.device | str) -> int:
    """Floats of logits one forward may keep (rows x positions x vocabulary) before callers split a batch.

    A GPU's memory holds a few GiB of logits at no cost and wants large batches; on a CPU every pass over a
    large logits tensor is memory traffic, so batches of long rows over a large vocabulary are cut sooner (a
    [8, 256, 128k] float tensor is 1 GiB: attacking 8 examples at once was slower per example than one at a
    time on a CPU)."""
    return 1 << 29 if torch.device(device).type == "cuda" else 1 << 26  # 2 GiB / 256 MiB of float32


def mask_budget(device: torch.device | str) -> int:
    """Elements (rows x queries x keys) the attention mask of one forward may have.

    transformers expands a 2-D padding mask to a [B, 1, Q, K] boolean mask whenever it cannot leave causality to
    SDPA's ``is_causal`` (a cached prefix, a padding hole), and torch's CPU SDPA turns that into a float mask of
    the same shape: 5 bytes per element, quadratic in the prompt. Callers split rows so each forward's mask fits
    (:meth:`HFBackend.rows_per_forward`); a row that alone does not fit is fed without its cached prefix, which
    leaves no mask at all (:meth:`HFBackend._padded`). 64 Mi elements (320 MiB) on a GPU, 1 Mi (5 MiB) on a
    CPU, where every pass over the mask is memory traffic (rows of ~100 tokens after 600 of exemplars still go
    14 to a forward there)."""
    return 1 << 26 if torch.device(device).type == "cuda" else 1 << 20


@dataclass
class DecodedRow:
    token_ids: list[int]
    text: str
    finish_reason: str


class HFBackend:
    """A transformers causal LM with generation, log-prob scoring and white-box access."""

    capabilities = frozenset({GENERATE, LOGPROBS, WHITEBOX})

    def __init__(self, model: Any, tokenizer: Any, name: str, *, batch_size: int = 8, use_prefix_cache: bool = True,
                 decoder: str = "auto", step_compile: str = "auto"):
        # Attacks need gradients w.r.t. inputs only; frozen weights keep backward passes from ever building
        # (or accumulating) weight gradients, e.g. a dense [vocab, hidden] embedding gradient.
        self.model = model.eval().requires_grad_(False)
        self._cache_kwarg = cache_argument(self.model)
        self.tokenizer = tokenizer
        self.name = name
        self.batch_size = max(1, int(batch_size))
        self.use_prefix_cache = use_prefix_cache
        self.device = model.get_input_embeddings().weight.device  # where inputs go (also under a device_map)
        self._prefixes: dict[tuple[int, ...], PrefixCache] = {}
        self._token_cache: dict[str, list[int]] = {}
        self._split_cache: dict[str, tuple[list[int], list[int]]] = {}
        self._chat_cache: dict[tuple[Any, ...], str] = {}
        # --thinking on|off: the template's own switch (Qwen3's enable_thinking), set by build_hf_backend.
        self.chat_template_kwargs: dict[str, Any] = {}
        # A plain value (a Ray driver's stand-in copies it): how thinking is written is read off it.
        template = getattr(tokenizer, "chat_template", None)
        self.chat_template: str | None = template if isinstance(template, str) else None
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        if eos is None:
            eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self.bos_ids = [tokenizer.bos_token_id] if getattr(tokenizer, "bos_token_id", None) is not None else []
        # Sliding-window layers mask by index, so a padding hole would shift their window. With sdpa/eager
        # attention we hand the model per-layer-type masks computed from *positions* (exact); otherwise such
        # models batch only rows of equal length. Either way results match batch size 1.
        self.sliding_window = int(getattr(model.config, "sliding_window", None) or 0)
        has_sliding = self.sliding_window > 0 and any(
            t == "sliding_attention" for t in (getattr(model.config, "layer_types", None) or [])
        )
        attn = getattr(model.config, "_attn_implementation", None) or "sdpa"
        self.attention = attn
        self.explicit_masks = has_sliding and attn in ("sdpa", "eager")
        self.additive_masks = attn == "eager"
        self.exact_batching_only = has_sliding and not self.explicit_masks
        #: Tokens the model can attend over (prompt + generation); longer prompts are refused per example.
        self.context_length = context_length(model, tokenizer)
        self.mask_budget = mask_budget(self.device)
        self._static = self._static_engine(decoder, step_compile)

    def _static_engine(self, decoder: str, step_compile: str) -> StaticEngine | None:
        """The static-cache decoder's engine when ``decoder`` asks for it and the model allows it, else None.

        ``auto``: static on cuda where eligible, dynamic elsewhere (CPU decoding is not launch-bound). ``static``:
        the static path on any device (on CPU without CUDA graphs). ``dynamic``: never.
        """
        from robusteval.models.static_decode import COMPILE_MODES, StaticEngine, static_ineligible

        if decoder not in DECODERS:
            raise UserError(f"decoder {decoder!r}: use one of {', '.join(DECODERS)}")
        if step_compile not in COMPILE_MODES:
            raise UserError(f"step_compile {step_compile!r}: use one of {', '.join(COMPILE_MODES)}")
        if decoder == "dynamic" or (decoder == "auto" and self.device.type != "cuda"):
            return None
        reason = static_ineligible(self.model)
        if reason is not None:
            status(f"{self.name}: decoding with the dynamic KV cache, not a static one with CUDA graphs: {reason}")
            return None
        return StaticEngine(self.model, self._cache_kwarg, self.batch_size, step_compile)

    @property
    def decoder(self) -> str:
        """``static`` while decoding runs over the static cache, else ``dynamic`` (also after a failure)."""
        return "static" if self._static is not None and self._static.failed is None else "dynamic"

    @torch.no_grad()
    def warm_up(self, length: int | None = None) -> None:
        """Compile (and on cuda capture) the static decoder's step for the default bucket now, at load time,
        rather than inside the first batch: a throwaway decode of ``batch_size`` rows over a cache of ``length``
        slots (default :data:`~robusteval.models.static_decode.WARM_UP_LENGTH`); then check it against the
        dynamic cache in that bucket (:func:`~robusteval.models.static_decode.self_check`: on a disagreement the
        backend decodes with the dynamic cache from then on, said in run.log). On the dynamic path on a GPU, a
        two-token decode of ``batch_size`` rows, so that CUDA's and cuBLAS's lazy start-up is paid here too."""
        from robusteval.models.static_decode import WARM_UP_LENGTH, StaticDecoder, self_check

        engine = self._static
        if engine is None or engine.failed is not None:
            if self.device.type == "cuda":
                token = self.bos_ids[0] if self.bos_ids else (self.tokenizer.pad_token_id or 0)
                self.decode_batch([], [[token]] * self.batch_size, max_new_tokens=2)
            return
        length = length or WARM_UP_LENGTH
        if engine.compile_mode != "off":
            import time

            began = time.monotonic()
            status(f"{self.name}: compiling the static-cache decode step ({engine.compile_mode}, "
                   f"{self.batch_size} rows, {length} slots)")
            token = self.bos_ids[0] if self.bos_ids else (self.tokenizer.pad_token_id or 0)
            batch = self._padded([], [[token]])
            decoder = StaticDecoder(self, engine, batch, length - batch.embeds.shape[1])
            decoder.start()
            tokens = torch.tensor([token])
            # CUDA graph trees run a new graph eagerly once, record it on the second call and replay from the third.
            for _ in range(3):
                decoder.step(tokens)
            if engine.failed is None:
                status(f"{self.name}: decode step ready in {time.monotonic() - began:.1f} s")
        # Then the replayed step (the same bucket) against the dynamic cache.
        disagreement = self_check(self, engine, length) if engine.failed is None else None
        if disagreement is not None:
            engine.fail("self-check", ValueError(disagreement))

    def __repr__(self) -> str:
        return f"HFBackend({self.name!r}, device={self.device}, dtype={self.dtype})"

    # ------------------------------------------------------------------ basics
    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def embedding_layer(self) -> torch.nn.Module:
        return self.model.get_input_embeddings()

    @property
    def embedding_matrix(self) -> torch.Tensor:
        return self.embedding_layer.weight

    @property
    def embed_scale(self) -> float:
        """Some models (Gemma) scale embeddings inside the embedding module; one-hot paths must match it."""
        scale = getattr(self.embedding_layer, "embed_scale", 1.0)
        return float(scale.item() if isinstance(scale, torch.Tensor) else scale)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding_layer(ids.to(self.device))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (memoised: exemplar texts repeat)."""
        ids = self._token_cache.get(text)
        if ids is None:
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(self._token_cache) < 100_000:
                self._token_cache[text] = ids
        return list(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def prompt_ids(self, prefix: str, prompt: str) -> tuple[list[int], list[int]]:
        """(prefix ids incl. BOS, prompt ids): ``prefix + prompt`` tokenised as ONE string and split at the
        boundary, so the model reads exactly the whole prompt's tokens (tokenising the parts separately adds a
        space marker at the start of the prompt with SentencePiece tokenizers that prepend one)."""
        if not prefix:
            return list(self.bos_ids), self.encode(prompt)
        key = prefix + "\x00" + prompt
        cached = self._split_cache.get(key)
        if cached is None:
            try:
                ids, offsets = tokenize_with_offsets(self.tokenizer, prefix + prompt)
            except UserError:  # a slow tokenizer without offsets: separate segments, as before
                return self.bos_ids + self.encode(prefix), self.encode(prompt)
            head, rest = split_by_offsets(ids, offsets, [len(prefix)])
            cached = (head, rest)
            if len(self._split_cache) < 100_000:
                self._split_cache[key] = cached
        return self.bos_ids + list(cached[0]), list(cached[1])

    # ------------------------------------------------------------------ chat templates
    def _require_chat_template(self) -> None:
        if not getattr(self.tokenizer, "chat_template", None):
            raise UserError(f"{self.name}: this model's tokenizer has no chat template, so it cannot be prompted "
                            "as a chat; drop --chat (or --judge-chat, for a judge; a base model is prompted with plain text)")

    def chat_text(self, messages: Sequence[Message], *, add_generation_prompt: bool = True) -> str:
        """``messages`` rendered by the tokenizer's chat template (by default ending with the assistant's
        header, where the reply starts). Tokenise the result with ``add_special_tokens=False``."""
        self._require_chat_template()
        frozen = freeze_messages(messages)
        key = (tuple((m["role"], m["content"]) for m in frozen), add_generation_prompt)
        text = self._chat_cache.get(key)
        if text is None:
            try:
                text = self.tokenizer.apply_chat_template(
                    [dict(m) for m in frozen], tokenize=False, add_generation_prompt=add_generation_prompt,
                    **self.chat_template_kwargs,
                )
            except Exception as exc:  # jinja2 errors, raise_exception() in a template ("roles must alternate")
                if not _template_error(exc):
                    raise
                detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                # Some templates (Gemma's) refuse a system turn: say how to leave it out.
                hint = "; --system-prompt '' leaves out the system turn" if "system" in detail.lower() else ""
                raise UserError(f"{self.name}: the chat template cannot render this conversation "
                                f"({detail}){hint}") from None
            if not isinstance(text, str):
                raise BackendError(f"{self.name}: apply_chat_template returned {type(text).__name__}, not text")
            if len(self._chat_cache) >= 10_000:  # exemplar prefixes repeat; questions do not
                self._chat_cache.pop(next(iter(self._chat_cache)))
            self._chat_cache[key] = text
        return text

    def chat_prefix_text(self, messages: Sequence[Message]) -> str:
        """The part of :meth:`chat_text` that comes from the turns before the final user turn (system prompt,
        exemplars): what is identical for every question and so cached. "" when there are no earlier turns or
        the template renders them differently once a question follows (then nothing is cached)."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users or users[-1] == 0:
            self._require_chat_template()
            return ""
        full = self.chat_text(messages)
        try:
            head = self.chat_text(messages[: users[-1]], add_generation_prompt=False)
        except UserError:  # e.g. a template that insists the conversation ends with a user turn
            return ""
        return head if full.startswith(head) else ""

    def chat_ids(self, messages: Sequence[Message]) -> tuple[list[int], list[int]]:
        """(cached prefix ids, the rest) of the rendered conversation; together exactly the ids of the whole."""
        ids = self.encode(self.chat_text(messages))
        head = self.chat_prefix_text(messages)
        split = 0
        if head:
            # Cut the *full* ids where they stop agreeing with the head's own ids: exact whatever the tokenizer
            # does at the boundary (a token spanning it simply stays in the uncached part).
            for a, b in zip(self.encode(head), ids, strict=False):
                if a != b:
                    break
                split += 1
        split = min(split, len(ids) - 1)  # at least one token after the cache: it predicts the reply
        return ids[: max(split, 0)], ids[max(split, 0) :]

    def request_ids(self, request: GenerationRequest) -> tuple[list[int], list[int]]:
        """(prefix ids, the rest) of a request: its conversation when it has one, else ``prefix + prompt``; then
        the text its reply already holds (``reply_prefix``)."""
        if request.messages:
            prefix, rest = self.chat_ids(request.messages)
            return prefix, rest + (self.encode(request.reply_prefix) if request.reply_prefix else [])
        return self.prompt_ids(request.prefix, request.prompt + request.reply_prefix)

    # ------------------------------------------------------------------ prefix cache
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
            rows = [row.to(self.device, self.dtype) for row in suffixes]
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

    # ------------------------------------------------------------------ scoring
    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "", *,
                              messages: Sequence[Message] = ()) -> list[float]:
        """Summed log-probs of each continuation after ``prefix + prompt`` (or after the conversation
        ``messages``, rendered with its generation prompt): the one-request case of
        :meth:`continuation_logprobs_many`."""
        request = ScoreRequest(prompt, tuple(continuations), prefix, tuple(messages))
        return self.continuation_logprobs_many([request])[0]

    @torch.no_grad()
    def continuation_logprobs_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        """:meth:`continuation_logprobs` of every request, in order, all (request, continuation) rows scored
        together: grouped by their cached prefix ids, then in forwards of at most ``batch_size`` rows whose kept
        logits fit :func:`logit_budget`.

        A row is the prompt's ids followed by the continuation's (encoded on its own); rows of different lengths
        are left-padded after the prefix (:meth:`_padded`), so each row's continuation ends in the last column and
        only the last ``longest continuation + 1`` positions go through the LM head.
        """
        scores = [[0.0] * len(request.continuations) for request in requests]
        groups: dict[tuple[int, ...], list[_ScoreRow]] = {}
        for index, request in enumerate(requests):
            prefix_ids, prompt_ids = (self.chat_ids(request.messages) if request.messages
                                      else self.prompt_ids(request.prefix, request.prompt))
            # Logit at position t predicts token t+1; the first continuation token is predicted by the last prompt
            # token, so the prompt must not be empty.
            if not prompt_ids:
                raise UserError("continuation_logprobs needs a non-empty prompt")
            for column, continuation in enumerate(request.continuations):
                ids = self.encode(continuation)
                if ids:  # an empty continuation scores 0
                    groups.setdefault(tuple(prefix_ids), []).append(_ScoreRow(index, column, prompt_ids, ids))
        vocab = int(self.embedding_matrix.shape[0])
        for prefix_ids, rows in groups.items():
            for chunk in self._score_chunks(rows, vocab, len(prefix_ids)):
                for row, score in zip(chunk, self._score_rows(list(prefix_ids), chunk), strict=True):
                    scores[row.request][row.column] = score
        return scores

    def _score_chunks(self, rows: list[_ScoreRow], vocab: int, prefix_len: int = 0) -> list[list[_ScoreRow]]:
        """``rows`` in forwards of at most ``batch_size`` rows whose kept logits (rows x (longest continuation + 1)
        x vocab) fit :func:`logit_budget` and whose attention mask fits :attr:`mask_budget` (one row always goes);
        rows of like length together, so little is
        padding. Sliding-window models that cannot batch exactly across lengths get rows of one length only."""
        rows = sorted(rows, key=lambda r: (len(r.prompt) + len(r.ids), len(r.ids)))
        buckets: dict[int, list[_ScoreRow]] = {}
        for row in rows:
            buckets.setdefault(len(row.prompt) + len(row.ids) if self.exact_batching_only else 0, []).append(row)
        chunks: list[list[_ScoreRow]] = []
        budget = logit_budget(self.device)
        for bucket in buckets.values():
            chunk: list[_ScoreRow] = []
            keep = 0
            widest = 0
            for row in bucket:
                wider = max(keep, len(row.ids) + 1)
                width = max(widest, len(row.prompt) + len(row.ids))
                if chunk and (len(chunk) >= self.batch_size or (len(chunk) + 1) * wider * vocab > budget
                              or len(chunk) + 1 > self.rows_per_forward(prefix_len, width)):
                    chunks.append(chunk)
                    chunk, wider, width = [], len(row.ids) + 1, len(row.prompt) + len(row.ids)
                chunk.append(row)
                keep, widest = wider, width
            if chunk:
                chunks.append(chunk)
        return chunks

    def _score_rows(self, prefix_ids: list[int], rows: Sequence[_ScoreRow]) -> list[float]:
        """Summed log-probs of each row's continuation after its prompt, in one forward after ``prefix_ids``."""
        full = [row.prompt + row.ids for row in rows]
        embeds = self.embed(torch.tensor([i for ids in full for i in ids], device=self.device))
        keep = max(len(row.ids) for row in rows) + 1  # the last position predicts past the end
        logits = self.forward(prefix_ids, list(embeds.split([len(ids) for ids in full])), logits_to_keep=keep)
        out = []
        for b, row in enumerate(rows):
            # Row b's continuation fills its last len(ids) columns; they are predicted by the column before each.
            predicting = logits[b, keep - 1 - len(row.ids) : keep - 1].float()
            target = torch.tensor(row.ids, device=predicting.device)
            out.append(float(torch.log_softmax(predicting, dim=-1).gather(1, target[:, None]).sum()))
        return out

    # ------------------------------------------------------------------ generation
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
        per_row = {
            "temperatures": list(temperatures or [0.0] * n),
            "top_ps": list(top_ps or [1.0] * n),
            "stops": [tuple(s) for s in (stops or [()] * n)],
            "seeds": list(seeds or [None] * n),
        }
        buckets: dict[int, list[int]] = {}
        for i, suffix in enumerate(suffixes):
            buckets.setdefault(len(suffix) if self.exact_batching_only else 0, []).append(i)
        out: list[DecodedRow | None] = [None] * n
        for indices in buckets.values():
            for chunk in self._row_chunks(len(prefix_ids), [len(suffixes[i]) for i in indices], indices):
                rows = self.decode_batch(
                    prefix_ids,
                    [suffixes[i] for i in chunk],
                    max_new_tokens=max_new_tokens,
                    **{name: [values[i] for i in chunk] for name, values in per_row.items()},
                )
                for i, row in zip(chunk, rows, strict=True):
                    out[i] = row
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
    ) -> list[DecodedRow]:
        """Decode a batch after a shared prefix. ``suffixes`` are token-id lists, embeddings [B, L, H], or
        embedding rows [L_i, H] of different lengths.

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
            for row in active:
                token = int(chosen[row])
                if token in self.eos_ids:
                    finish[row] = "stop"
                    continue
                generated[row].append(token)
                if stops[row]:
                    cut = self._stopped_text(generated[row], stops[row])
                    if cut is not None:
                        texts[row] = cut
                        finish[row] = "stop"
            active = [row for row in active if not finish[row]]
            if not active or step == max_new_tokens - 1:
                break
            logits = decoder.step(chosen)
        rows = []
        for row in range(size):
            if finish[row] == "stop" and texts[row]:
                text = texts[row]
            else:
                text = self.decode(generated[row])
                cut_at = _first_stop(text, stops[row])
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

    def _stopped_text(self, ids: list[int], stops: Sequence[str]) -> str | None:
        """The text of ``ids`` cut before its first stop string when the newest token completed one, else None.

        Only the tail is decoded at every step (a window of the last tokens long enough to hold the longest stop
        string and the newest token's text, with a margin for the window's own first characters, which may
        differ from the full text's: a dropped prefix space, a split UTF-8 character); the whole text is
        decoded only when the tail shows a stop, and the cut is made on it, exactly as a full decode would.
        """
        need = max(len(s) for s in stops) + len(self.decode(ids[-1:])) + _STOP_MARGIN
        window = 8
        tail = self.decode(ids[-window:])
        while len(tail) < need and window < len(ids):
            window *= 2
            tail = self.decode(ids[-window:])
        if _first_stop(tail, stops) is None:
            return None
        text = self.decode(ids)
        cut = _first_stop(text, stops)
        return None if cut is None else text[:cut]

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

    def cut_at_stop(self, row: DecodedRow, stops: Sequence[str]) -> DecodedRow:
        """``row`` as if decoding had stopped at the first stop string (same text and finish reason)."""
        cut = _first_stop(row.text, stops)
        if cut is None:
            return row
        ids = list(row.token_ids)
        # Keep the shortest token prefix whose text reaches the stop string, as early stopping would.
        for k in range(1, len(ids) + 1):
            if _first_stop(self.decode(ids[:k]), stops) is not None:
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


def _template_error(exc: Exception) -> bool:
    """Whether ``exc`` comes from rendering a chat template (jinja2), as opposed to a failure of our own."""
    try:
        from jinja2 import TemplateError
    except ImportError:  # pragma: no cover - transformers needs jinja2 for chat templates
        return False
    return isinstance(exc, TemplateError | ValueError | TypeError)


#: Characters of the decoded tail beyond the longest stop string and the newest token (see ``_stopped_text``).
_STOP_MARGIN = 8


class DynamicDecoder:
    """Feeds a :class:`PaddedBatch` to the model and then one token per row per step, growing a DynamicCache
    (the prefix's cache forked per row): exact for every model, sliding-window layers included."""

    def __init__(self, backend: HFBackend, batch: PaddedBatch):
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
        self.mask = batch.mask
        self.key_positions = batch.key_positions
        self.next_pos = batch.next_pos

    def _run(self, **inputs: Any) -> torch.Tensor:
        backend = self.backend
        # Only the last position's logits are read: the LM head over a 128k vocabulary for every prompt position
        # would cost more than the rest of the prefill.
        out = backend.model(**inputs, **{backend._cache_kwarg: self.past}, use_cache=True, logits_to_keep=1)
        self.past = returned_cache(out)
        return out.logits[:, -1, :]

    def start(self) -> torch.Tensor:
        """Logits [B, V] after the whole prompt."""
        batch = self.batch
        attention = self.backend._attention(self.mask, self.key_positions, batch.embeds.shape[1])
        return self._run(inputs_embeds=batch.embeds, attention_mask=attention, position_ids=batch.positions)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [B, V] after feeding ``tokens`` [B] (one per row)."""
        device = self.backend.device
        size = tokens.shape[0]
        self.mask = torch.cat([self.mask, torch.ones(size, 1, dtype=torch.long, device=device)], dim=1)
        self.key_positions = torch.cat([self.key_positions, self.next_pos.view(size, 1)], dim=1)
        logits = self._run(input_ids=tokens.view(size, 1).to(device),
                           attention_mask=self.backend._attention(self.mask, self.key_positions, 1),
                           position_ids=self.next_pos.view(size, 1))
        self.next_pos = self.next_pos + 1
        return logits


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else None


#: ``--model-args`` keys passed to ``from_pretrained`` (the tokenizer gets the first two).
MODEL_ARGS = ("revision", "trust_remote_code", "attn_implementation", "device_map", "low_cpu_mem_usage")


def load_hf_model(target: str, *, dtype: str = "auto", device: str = "auto",
                  model_args: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Load (model, tokenizer) from a local folder, a GGUF file (converted once) or a hub id.

    ``model_args`` go to ``from_pretrained``: revision, trust_remote_code, attn_implementation, device_map
    (the model is then placed by accelerate, not moved to ``device``), low_cpu_mem_usage.
    """
    model_args = dict(model_args or {})
    unknown = sorted(set(model_args) - set(MODEL_ARGS))
    if unknown:
        raise UserError(f"model args: unknown key(s) {', '.join(unknown)}; hf accepts {', '.join(MODEL_ARGS)}")
    tokenizer_args = {k: model_args[k] for k in ("revision", "trust_remote_code") if k in model_args}
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if not sys.stderr.isatty():  # tqdm bars in a log file are hundreds of carriage returns, not progress
        hf_logging.disable_progress_bar()
    path = Path(target).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"hf:{target}: GGUF file not found")
        path = convert_gguf(path)
    elif target.startswith((".", "/", "~")) and not path.exists():
        raise UserError(f"hf:{target}: no such model directory")
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    source = str(path) if path.exists() else target  # otherwise a hub id: the real download path for users
    status(f"loading hf:{target} on {torch_device} ({str(torch_dtype).removeprefix('torch.')})")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **tokenizer_args)
        model = _from_pretrained(AutoModelForCausalLM, source, torch_dtype, model_args)
    except Exception as exc:
        raise _unloadable(f"hf:{target}: cannot load the model", exc,
                          "check that the folder holds a complete transformers checkpoint (config.json, weights, "
                          "tokenizer files) whose architecture this transformers version supports, or download "
                          "it again") from exc
    return (model if "device_map" in model_args else model.to(torch_device)), tokenizer


def _from_pretrained(auto: Any, source: str, dtype: torch.dtype, model_args: dict[str, Any]) -> Any:
    """The model with SDPA attention unless ``model_args`` names another: SDPA keeps a long prompt's memory in
    proportion to its KV cache where transformers can leave causality to ``is_causal`` (eager attention always
    builds [Q, K] scores; see :func:`mask_budget`). An architecture without SDPA loads with transformers' choice."""
    if "attn_implementation" in model_args:
        return auto.from_pretrained(source, dtype=dtype, **model_args)
    try:
        return auto.from_pretrained(source, dtype=dtype, attn_implementation="sdpa", **model_args)
    except ValueError as exc:
        if "sdpa" not in str(exc).lower():
            raise
        return auto.from_pretrained(source, dtype=dtype, **model_args)


THINKING_SWITCH = ("on", "off")


def check_thinking_option(thinking: str | None) -> None:
    """``--thinking``: ``on``, ``off`` or unset (the template's default)."""
    if thinking is not None and thinking not in THINKING_SWITCH:
        raise UserError(f"--thinking {thinking}: use on or off (unset: the chat template's default)")


@register_backend("hf")
def build_hf_backend(
    spec: ModelSpec,
    *,
    dtype: str = "auto",
    device: str = "auto",
    batch_size: int = 8,
    prefix_cache: bool = True,
    model_args: dict[str, Any] | None = None,
    decoder: str = "auto",
    step_compile: str = "auto",
    thinking: str | None = None,
    **other_backends: Any,
) -> HFBackend:
    """``decoder``: ``auto`` (a static KV cache with a CUDA-graph step on cuda where the model allows it, the
    dynamic cache elsewhere), ``static`` or ``dynamic``; ``step_compile``: how the static step is compiled
    (:data:`~robusteval.models.static_decode.COMPILE_MODES`). The static step is compiled here, at load time.
    ``thinking``: ``on``/``off`` is passed to the chat template as ``enable_thinking`` (refused for a template
    without that switch). ``other_backends``: the openai backend's options, ignored (one option set fits every
    spec); others are typos."""
    check_backend_options(spec, other_backends)
    check_thinking_option(thinking)
    model, tokenizer = load_hf_model(spec.target, dtype=dtype, device=device, model_args=model_args)
    if thinking is not None and "enable_thinking" not in str(getattr(tokenizer, "chat_template", "") or ""):
        raise UserError(f"--thinking {thinking}: the chat template of hf:{spec.target} has no enable_thinking "
                        "switch; leave --thinking out (use --reasoning to say how its traces are written)")
    torch.set_grad_enabled(True)
    backend = HFBackend(model, tokenizer, f"hf:{spec.target}", batch_size=batch_size, use_prefix_cache=prefix_cache,
                        decoder=decoder, step_compile=step_compile)
    if thinking is not None:
        backend.chat_template_kwargs = {"enable_thinking": thinking == "on"}
    backend.warm_up()
    return backend
