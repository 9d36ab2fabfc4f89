"""Model spec strings (``hf:/path``, ``openai:MODEL@URL``) and the backend registry.

Backends register with ``@register_backend("kind")``; the modules of the built-in kinds are imported only
when a spec of that kind is loaded, so parsing a spec never imports torch. :class:`ModelHost` is where models
load when an executor with workers is in force (loading itself is :mod:`robusteval.models.loading`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.registry import Registry

BackendFactory = Callable[..., Backend]
BACKENDS: Registry[BackendFactory] = Registry(
    "model backend", lazy={"hf": "robusteval.models.hf", "openai": "robusteval.models.openai_api"},
    entry_points="robusteval.backends",
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
HF_OPTIONS = ("dtype", "device", "batch_size", "prefix_cache", "model_args", "decoder", "step_compile",
              "thinking", "max_memory")
#: What loading an ``openai:`` model takes (the fields of ``robusteval.models.openai_api.OpenAIConfig``).
OPENAI_OPTIONS = ("api_key_env", "max_concurrency", "timeout", "retry_for", "max_retries", "backoff_base",
                  "backoff_max", "endpoint", "logprobs", "reasoning_effort", "max_tokens_field",
                  "thinking")
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
    from robusteval.config import did_you_mean

    kind = spec.kind if isinstance(spec, ModelSpec) else spec.partition(":")[0]
    known = (*BACKEND_OPTIONS, *_registered_options(kind))
    unknown = [name for name in options if name not in known]
    if unknown:
        hints = [f"{name}{did_you_mean(name, known)}" for name in unknown]
        raise UserError(f"unknown model option{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; known: "
                        f"{', '.join(known)}")


class ModelHost(Protocol):
    """Where models are described and loaded when not simply in this process: the executor in force.
    :func:`robusteval.executors.use_executor` makes its executor the host, so models never import executors."""

    def describe_model(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]: ...

    def load_model(self, spec: Any, options: dict[str, Any]) -> Any: ...


_host: ContextVar[ModelHost | None] = ContextVar("robusteval_model_host", default=None)


def model_host() -> ModelHost | None:
    """The host in force (see :class:`ModelHost`); None: models are described and loaded in this process."""
    return _host.get()


@contextmanager
def hosted_by(host: ModelHost) -> Iterator[ModelHost]:
    """Describe and load every model inside the block through ``host``."""
    token = _host.set(host)
    try:
        yield host
    finally:
        _host.reset(token)
