"""Hugging Face transformers causal LMs: generation, scoring and white-box access (the ``hf:`` backend).

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

This module assembles :class:`HFBackend` and registers the ``hf`` backend; each concern has its own file, and
its public names are re-exported here:

* :mod:`~robusteval.models.hf_loading`: devices, dtypes, GGUF conversion, ``from_pretrained``;
* :mod:`~robusteval.models.hf_prompts`: plain and chat prompts as (cached prefix, rest) token ids;
* :mod:`~robusteval.models.hf_forward`: the prefix cache, padded batches, attention masks, the white-box forward;
* :mod:`~robusteval.models.hf_scoring`: continuation log-probs;
* :mod:`~robusteval.models.decode` (beside :mod:`~robusteval.models.static_decode`): the decode loop and the
  dynamic-cache decoder; :mod:`~robusteval.models.stops`: stop strings.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from robusteval.errors import UserError
from robusteval.models.base import GENERATE, LOGPROBS, WHITEBOX, Capabilities
from robusteval.models.context import context_length
from robusteval.models.decode import DecodedRow, DynamicDecoder, HFDecoding
from robusteval.models.hf_forward import PaddedBatch, PrefixCache, cache_argument, mask_budget, returned_cache
from robusteval.models.hf_loading import (
    MODEL_ARGS,
    THINKING_SWITCH,
    check_thinking_option,
    convert_gguf,
    load_hf_model,
    resolve_device,
    resolve_dtype,
)
from robusteval.models.hf_options import DECODERS, HFOptions
from robusteval.models.hf_scoring import HFScoring, logit_budget
from robusteval.models.memory_plan import parse_size
from robusteval.models.options import from_pretrained
from robusteval.models.registry import ModelSpec, register_backend, resolve_options
from robusteval.progress import status

if TYPE_CHECKING:
    from robusteval.models.static_decode import StaticEngine

__all__ = [
    "DECODERS",
    "MODEL_ARGS",
    "THINKING_SWITCH",
    "DecodedRow",
    "DynamicDecoder",
    "HFBackend",
    "PaddedBatch",
    "PrefixCache",
    "build_hf_backend",
    "cache_argument",
    "check_thinking_option",
    "convert_gguf",
    "load_hf_model",
    "logit_budget",
    "mask_budget",
    "resolve_device",
    "resolve_dtype",
    "returned_cache",
]


class HFBackend(HFScoring, HFDecoding):
    """A transformers causal LM with generation, log-prob scoring and white-box access."""

    declared = Capabilities(frozenset({GENERATE, LOGPROBS, WHITEBOX}), scores_many=True, scores_in_context=True)
    capabilities = declared.offers

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
        self._prefixes = {}
        self._token_cache = {}
        self._split_cache = {}
        self._chat_cache = {}
        # --thinking on|off: the template's own switch (Qwen3's enable_thinking), set by build_hf_backend.
        self.chat_template_kwargs = {}
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
        from robusteval.models.static_decode import (
            SELF_CHECK_TOLERANCE,
            WARM_UP_LENGTH,
            StaticDecoder,
            self_check,
        )

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
        elif engine.failed is None and engine.check_error is not None:
            status(f"{self.name}: the static decode step agrees with the dynamic cache (relative error "
                   f"{engine.check_error:.2g}, limit {SELF_CHECK_TOLERANCE})")

    def __repr__(self) -> str:
        return f"HFBackend({self.name!r}, device={self.device}, dtype={self.dtype})"


@register_backend("hf", summary="transformers causal LMs: local folders, hub ids, GGUF files")
def build_hf_backend(spec: ModelSpec, options: HFOptions | None = None, **keywords: Any) -> HFBackend:
    """The ``hf`` backend of ``spec`` under ``options`` (:class:`~robusteval.models.hf_options.HFOptions`; or as
    ``keywords``, checked as ``load_model``'s). The static decode step is compiled here, at load time.
    ``thinking`` ``on``/``off`` is passed to the chat template as ``enable_thinking`` (refused for a template
    without that switch). ``max_memory`` (``4GB``): the most this process should hold; attack batches and
    scoring chunks are planned under it (:mod:`~robusteval.models.memory_plan`)."""
    if options is None or keywords:
        resolved = resolve_options(spec, {**(dataclasses.asdict(options) if options else {}), **keywords})
        options = resolved if isinstance(resolved, HFOptions) else HFOptions()
    limit = parse_size(options.max_memory) if options.max_memory is not None else None
    check_thinking_option(options.thinking)
    model, tokenizer = load_hf_model(spec.target, dtype=options.dtype, device=options.device,
                                     model_args=from_pretrained(options))
    thinking = options.thinking
    if thinking is not None and "enable_thinking" not in str(getattr(tokenizer, "chat_template", "") or ""):
        raise UserError(f"--thinking {thinking}: the chat template of hf:{spec.target} has no enable_thinking "
                        "switch; leave --thinking out (use --reasoning to say how its traces are written)")
    torch.set_grad_enabled(True)
    backend = HFBackend(model, tokenizer, f"hf:{spec.target}", batch_size=options.batch_size,
                        use_prefix_cache=options.prefix_cache, decoder=options.decoder,
                        step_compile=options.step_compile)
    if thinking is not None:
        backend.chat_template_kwargs = {"enable_thinking": thinking == "on"}
    backend.max_memory = limit
    backend.warm_up()
    return backend
