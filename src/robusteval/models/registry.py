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


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a backend from a spec; ``options`` are backend-specific (dtype, device, model_args, api_key_env...).

    The backend carries its normalised identity as ``backend.identity`` (see :mod:`robusteval.models.identity`).
    """
    from robusteval.models.identity import describe_model

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    backend = BACKENDS.get(parsed.kind).value(parsed, **options)
    if not getattr(backend, "identity", None):
        backend.identity = describe_model(parsed, **options)  # type: ignore[attr-defined]
    return backend
