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


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a backend from a spec; ``options`` are backend-specific (dtype, device, model_args, api_key_env...).

    The backend carries its normalised identity as ``backend.identity`` (see :mod:`robusteval.models.identity`).
    Under a distributed executor (:func:`robusteval.executors.use_executor`) the workers load the model and
    this returns the driver's stand-in for it.
    """
    from robusteval.executors import current_executor

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
