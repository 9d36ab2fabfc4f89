"""Loading a model from its spec: ``robusteval.load_model``, here or through the executor in force.

Above :mod:`~robusteval.models.registry` (specs, the backend registry) and :mod:`~robusteval.models.identity`
(what a model is), which loading needs: every loaded backend carries its identity and its :class:`LoadRecipe`.
"""

from __future__ import annotations

import sys
from typing import Any

from robusteval.models.base import Backend
from robusteval.models.identity import describe_here
from robusteval.models.registry import (
    BACKENDS,
    LoadRecipe,
    ModelSpec,
    check_backend_options,
    model_host,
    parse_spec,
)
from robusteval.models.threads import apply_threads


def load_model(
    spec: str | ModelSpec,
    *,
    dtype: str = "auto",
    device: str = "auto",
    batch_size: int = 8,
    prefix_cache: bool = True,
    model_args: dict[str, Any] | None = None,
    decoder: str = "auto",
    step_compile: str = "auto",
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    timeout: float = 60.0,
    retry_for: float = 120.0,
    max_retries: int | None = None,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    endpoint: str = "completions",
    logprobs: str = "auto",
    reasoning_effort: str | None = None,
    max_tokens_field: str = "max_tokens",
    thinking: str | None = None,
    max_memory: str | int | None = None,
    **unknown: Any,
) -> Backend:
    """Load a model from its spec (``hf:/path/or/hub-id``, ``hf:/path/model.gguf``, ``openai:MODEL@URL``):
    ``robusteval.load_model``. The defaults are the command line's.

    hf: ``dtype`` (auto = bfloat16 on a GPU, float32 on a CPU; float32, bfloat16, float16), ``device`` (auto, cpu,
    cuda, cuda:1, ...), ``batch_size`` (rows per forward and generation), ``prefix_cache`` (reuse the prompt
    prefix's KV cache), ``model_args`` (``from_pretrained`` options: revision, trust_remote_code, ...; part of
    the run identity), ``decoder`` (auto, static or dynamic KV cache), ``step_compile`` (how a static decode
    step is compiled), ``max_memory`` (``4GB``: the most this process should hold; attack batches and scoring
    chunks are planned under it). openai: ``api_key_env`` (the environment variable holding the key), ``max_concurrency``
    (parallel requests), ``timeout`` (seconds per request), ``retry_for`` (seconds a failing request is retried,
    waiting with the others in flight on one shared backoff; not part of the model identity), ``max_retries``
    (an extra cap, default none), ``backoff_base``, ``backoff_max`` (seconds), ``endpoint`` (completions, chat
    or auto), ``logprobs`` (auto, echo, prompt_logprobs or off: how prompts are scored), ``reasoning_effort``
    and ``max_tokens_field`` (reasoning APIs). Both: ``thinking`` (on/off: the chat template's enable_thinking;
    unset: its default). Each backend ignores the other's options; an unknown keyword is an error naming them.
    A third-party backend's own options are passed the same way (``**unknown`` is checked against its factory).
    """
    options = {"dtype": dtype, "device": device, "batch_size": batch_size, "prefix_cache": prefix_cache,
               "model_args": model_args, "decoder": decoder, "step_compile": step_compile,
               "api_key_env": api_key_env, "max_concurrency": max_concurrency, "timeout": timeout,
               "retry_for": retry_for, "max_retries": max_retries, "backoff_base": backoff_base,
               "backoff_max": backoff_max, "endpoint": endpoint, "logprobs": logprobs,
               "reasoning_effort": reasoning_effort, "max_tokens_field": max_tokens_field, "thinking": thinking,
               "max_memory": max_memory, **unknown}
    _check_types(spec, options)
    return load_backend(spec, **options)


def _check_types(spec: Any, options: dict[str, Any]) -> None:
    """Refuse a spec that is no string and an option of the wrong kind (``batch_size="8"``) before anything
    loads, in the words of the configs' checks."""
    import typing

    from robusteval.config import type_problem
    from robusteval.errors import UserError

    if not isinstance(spec, str | ModelSpec):
        raise UserError(f"load_model(): spec: expected a model spec string (hf:PATH, openai:MODEL@URL, ...), got "
                        f"{type(spec).__name__} {spec!r}")
    hints = typing.get_type_hints(load_model)
    for name, value in options.items():
        problem = type_problem(value, hints[name]) if name in hints else None
        if problem is not None:
            raise UserError(f"load_model(): {name}: {problem}")


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a backend from a spec; ``options`` are any of :data:`BACKEND_OPTIONS` (see :func:`load_model`,
    the public form with each one spelled out); an unknown one is an error.

    The backend carries its normalised identity as ``backend.identity`` (see :mod:`robusteval.models.identity`).
    Under a distributed executor (:func:`robusteval.executors.use_executor`) the workers load the model and
    this returns the driver's stand-in for it.
    """
    check_backend_options(spec, options)
    host = model_host()
    return load_here(spec, **options) if host is None else host.load_model(spec, options)


def load_here(spec: str | ModelSpec, **options: Any) -> Backend:
    """:func:`load_backend` in this process, whatever the executor."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    _torch_threads()
    backend = BACKENDS.get(parsed.kind).value(parsed, **options)
    _torch_threads()  # the backend may have imported torch itself
    if not getattr(backend, "identity", None):
        backend.identity = describe_here(parsed, **options)  # type: ignore[attr-defined]
    backend.load_recipe = LoadRecipe(spec, dict(options), dict(backend.identity))  # type: ignore[attr-defined]
    return backend


def _torch_threads() -> None:
    """torch computes with the thread count chosen for this process (:mod:`robusteval.models.threads`), once
    torch is imported; a backend without torch (openai) never imports it for this."""
    if "torch" in sys.modules:
        apply_threads()
