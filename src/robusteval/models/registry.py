"""Model spec strings (``hf:/path``, ``openai:MODEL@URL``) and the backend registry.

Backends register with ``@register_backend("kind")``; the modules of the built-in kinds are imported only
when a spec of that kind is loaded, so parsing a spec never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.registry import Registry

BackendFactory = Callable[..., Backend]
BACKENDS: Registry[BackendFactory] = Registry(
    "model backend", lazy={"hf": "robusteval.models.hf", "openai": "robusteval.models.openai_api"}
)

SPEC_FORMS = "hf:/path/or/hub-id, hf:/path/model.gguf or openai:MODEL@http://host:port/v1"


def register_backend(kind: str, *, summary: str = "") -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: ``@register_backend("hf")`` makes ``hf:...`` specs build with the decorated factory."""
    return BACKENDS.register(kind, summary=summary)


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    target: str  # path or hub id for hf; model name for openai
    base_url: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}" + (f"@{self.base_url}" if self.base_url else "")


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec string; the error names the accepted forms."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest or kind not in BACKENDS.names():
        raise UserError(f"model spec '{spec}' not understood; use {SPEC_FORMS}")
    if kind == "openai":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise UserError(f"model spec '{spec}': expected openai:MODEL@http://host:port/v1")
        return ModelSpec(kind, model, url.rstrip("/"))
    return ModelSpec(kind, rest)


@dataclass(frozen=True)
class LoadRecipe:
    """How a backend was loaded: enough for another process (a Ray worker) to load the same model and check
    that it got the same ``identity``. Loaded backends carry it as ``backend.load_recipe``."""

    spec: str | ModelSpec
    options: dict[str, Any]
    identity: dict[str, Any]


#: What loading an ``hf:`` model takes (the keywords of ``robusteval.models.hf.build_hf_backend``).
HF_OPTIONS = ("dtype", "device", "batch_size", "prefix_cache", "model_args", "decoder", "step_compile")
#: What loading an ``openai:`` model takes (the fields of ``robusteval.models.openai_api.OpenAIConfig``).
OPENAI_OPTIONS = ("api_key_env", "max_concurrency", "timeout", "retry_for", "max_retries", "backoff_base",
                  "backoff_max", "endpoint", "logprobs")
#: Every spec accepts every built-in backend's options and ignores the others' (so one command line, with one
#: option set, can load a local judge and an API model); a name outside them all is a typo.
BACKEND_OPTIONS = HF_OPTIONS + OPENAI_OPTIONS


def _registered_options(kind: str) -> tuple[str, ...]:
    """The keyword parameters of a third-party backend's factory (built-in kinds are known without importing)."""
    import inspect

    if kind in ("hf", "openai") or kind not in BACKENDS.names():
        return ()
    try:
        parameters = inspect.signature(BACKENDS.get(kind).value).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def check_backend_options(spec: str | ModelSpec, options: dict[str, Any]) -> None:
    """Refuse an option no backend takes (``dtpye=``), naming the ones that exist, before anything loads."""
    import difflib

    kind = spec.kind if isinstance(spec, ModelSpec) else spec.partition(":")[0]
    known = (*BACKEND_OPTIONS, *_registered_options(kind))
    unknown = [name for name in options if name not in known]
    if unknown:
        hints = [f"{name} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(name, known, n=1))
                 else name for name in unknown]
        raise UserError(f"unknown model option{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; known: "
                        f"{', '.join(known)}")


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
    **unknown: Any,
) -> Backend:
    """Load a model from its spec (``hf:/path/or/hub-id``, ``hf:/path/model.gguf``, ``openai:MODEL@URL``):
    ``robusteval.load_model``. The defaults are the command line's.

    hf: ``dtype`` (auto = bfloat16 on a GPU, float32 on a CPU; float32, bfloat16, float16), ``device`` (auto, cpu,
    cuda, cuda:1, ...), ``batch_size`` (rows per forward and generation), ``prefix_cache`` (reuse the prompt
    prefix's KV cache), ``model_args`` (``from_pretrained`` options: revision, trust_remote_code, ...; part of
    the run identity), ``decoder`` (auto, static or dynamic KV cache), ``step_compile`` (how a static decode
    step is compiled). openai: ``api_key_env`` (the environment variable holding the key), ``max_concurrency``
    (parallel requests), ``timeout`` (seconds per request), ``retry_for`` (seconds a failing request is retried,
    waiting with the others in flight on one shared backoff; not part of the model identity), ``max_retries``
    (an extra cap, default none), ``backoff_base``, ``backoff_max`` (seconds), ``endpoint`` (completions, chat
    or auto), ``logprobs`` (auto, echo, prompt_logprobs or off: how prompts are scored). Each backend ignores
    the other's options; an unknown keyword is an error naming them.
    A third-party backend's own options are passed the same way (``**unknown`` is checked against its factory).
    """
    options = {"dtype": dtype, "device": device, "batch_size": batch_size, "prefix_cache": prefix_cache,
               "model_args": model_args, "decoder": decoder, "step_compile": step_compile,
               "api_key_env": api_key_env, "max_concurrency": max_concurrency, "timeout": timeout,
               "retry_for": retry_for, "max_retries": max_retries, "backoff_base": backoff_base,
               "backoff_max": backoff_max, "endpoint": endpoint, "logprobs": logprobs, **unknown}
    return load_backend(spec, **options)


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a backend from a spec; ``options`` are any of :data:`BACKEND_OPTIONS` (see :func:`load_model`,
    the public form with each one spelled out); an unknown one is an error.

    The backend carries its normalised identity as ``backend.identity`` (see :mod:`robusteval.models.identity`).
    Under a distributed executor (:func:`robusteval.executors.use_executor`) the workers load the model and
    this returns the driver's stand-in for it.
    """
    from robusteval.executors import current_executor

    check_backend_options(spec, options)
    return current_executor().load_model(spec, options)  # type: ignore[no-any-return]


def load_here(spec: str | ModelSpec, **options: Any) -> Backend:
    """:func:`load_backend` in this process, whatever the executor."""
    from robusteval.models.identity import describe_here

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    backend = BACKENDS.get(parsed.kind).value(parsed, **options)
    if not getattr(backend, "identity", None):
        backend.identity = describe_here(parsed, **options)  # type: ignore[attr-defined]
    backend.load_recipe = LoadRecipe(spec, dict(options), dict(backend.identity))  # type: ignore[attr-defined]
    return backend
