"""Loading a model from its spec: ``robusteval.load_model``, here or through the executor in force.

Above :mod:`~robusteval.models.registry` (specs, the backend registry) and :mod:`~robusteval.models.identity`
(what a model is), which loading needs: every loaded backend carries its identity and its :class:`LoadRecipe`.
"""

from __future__ import annotations

import sys
from typing import Any, Unpack

from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.models.identity import describe_here
from robusteval.models.load_options import LoadOptions
from robusteval.models.registry import (
    BACKENDS,
    LoadRecipe,
    ModelSpec,
    model_host,
    parse_spec,
    resolve_options,
)
from robusteval.models.threads import apply_threads


def load_model(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Backend:
    """Load a model from its spec (``hf:/path/or/hub-id``, ``hf:/path/model.gguf``, ``openai:MODEL@URL``):
    ``robusteval.load_model``. The defaults are the command line's.

    ``options`` are the fields of the backend's options class (:mod:`robusteval.models.options`; the table per
    backend is in docs/backends.md): the common ones (``dtype``, ``device``, ``batch_size``, ``max_memory``,
    ``thinking``), ``hf``'s (:class:`~robusteval.models.hf_options.HFOptions`: ``decoder``, ``revision``,
    ``trust_remote_code``, ...) and ``openai``'s (:class:`~robusteval.models.openai_options.OpenAIOptions`:
    ``timeout``, ``max_concurrency``, ``endpoint``, ``logprobs``, ...); a third-party backend's are those of the
    class it registered. Each backend ignores another backend's options (one option set fits every spec); a name
    no backend takes, or a value of the wrong kind, is one error naming it and the backend, before anything loads.

    Typed for type checkers as :class:`~robusteval.models.load_options.LoadOptions` (generated from those
    classes): mypy flags a misspelt keyword or a value of the wrong type. A third-party backend's options go in
    as ``**options`` of a ``dict[str, Any]``.
    """
    if not isinstance(spec, str | ModelSpec):
        raise UserError(f"load_model(): spec: expected a model spec string (hf:PATH, openai:MODEL@URL, ...), got "
                        f"{type(spec).__name__} {spec!r}")
    return load_backend(spec, **options)


def load_backend(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Backend:
    """Build a backend from a spec; ``options`` as :func:`load_model` takes them (an unknown one is an error).

    The backend carries its normalised identity as ``backend.identity`` (see :mod:`robusteval.models.identity`).
    Under a distributed executor (:func:`robusteval.executors.use_executor`) the workers load the model and
    this returns the driver's stand-in for it.
    """
    try:
        resolve_options(spec, options)
    except UserError as exc:
        raise UserError(f"load_model(): {exc}") from None
    host = model_host()
    return load_here(spec, **options) if host is None else host.load_model(spec, dict(options))


def load_here(spec: str | ModelSpec, **options: Any) -> Backend:
    """:func:`load_backend` in this process, whatever the executor."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    _torch_threads()
    backend = BACKENDS.get(parsed.kind).value(parsed, resolve_options(parsed, options))
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
