"""Model spec strings (``hf:/path``, ``openai:MODEL@URL``) and the backend registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robusteval.errors import UserError
from robusteval.models.base import Backend

BackendFactory = Callable[..., Backend]
_BACKENDS: dict[str, BackendFactory] = {}
# Modules that register a backend on import; imported lazily so `import robusteval` stays light.
_BACKEND_MODULES = {"hf": "robusteval.models.hf", "openai": "robusteval.models.openai_api"}


def register_backend(kind: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: ``@register_backend("hf")`` makes ``hf:...`` specs build with the decorated factory."""

    def wrap(factory: BackendFactory) -> BackendFactory:
        _BACKENDS[kind] = factory
        return factory

    return wrap


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
    if not sep or not rest or kind not in _BACKEND_MODULES:
        raise UserError(
            f"model spec '{spec}' not understood; use hf:/path/or/hub-id, hf:/path/model.gguf "
            "or openai:MODEL@http://host:port/v1"
        )
    if kind == "openai":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise UserError(f"model spec '{spec}': expected openai:MODEL@http://host:port/v1")
        return ModelSpec(kind, model, url.rstrip("/"))
    return ModelSpec(kind, rest)


def load_backend(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a backend from a spec string; ``options`` are backend-specific (dtype, device, api_key_env…)."""
    import importlib

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.kind not in _BACKENDS:
        importlib.import_module(_BACKEND_MODULES[parsed.kind])
    return _BACKENDS[parsed.kind](parsed, **options)
