"""Model spec strings (``hf:/path``, ``openai:MODEL@URL``) and the backend registry.

Backends register with ``@register_backend("kind", options=KindOptions)`` (their options class, see
:mod:`robusteval.models.options`); the modules of the built-in kinds are imported only
when a spec of that kind is loaded, so parsing a spec never imports torch. :class:`ModelHost` is where models
load when an executor with workers is in force (loading itself is :mod:`robusteval.models.loading`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.models.hf_options import HFOptions
from robusteval.models.openai_options import OpenAIOptions
from robusteval.models.options import CommonOptions, annotation, option_fields, specific_fields, value_problem
from robusteval.registry import Registry

#: ``factory(spec, options) -> Backend``: ``options`` an instance of the options class the backend registered.
BackendFactory = Callable[..., Backend]
#: The built-in kinds: the module that registers each (imported when a spec of that kind loads) and its options
#: class (known without importing it, so the command line reads it without torch).
_BUILTIN: dict[str, tuple[str, type[CommonOptions]]] = {
    "hf": ("robusteval.models.hf", HFOptions),
    "openai": ("robusteval.models.openai_api", OpenAIOptions),
}
BACKENDS: Registry[BackendFactory] = Registry(
    "model backend", lazy={kind: module for kind, (module, _) in _BUILTIN.items()},
    entry_points="robusteval.backends",
)

SPEC_FORMS = "hf:/path/or/hub-id, hf:/path/model.gguf or openai:MODEL@http://host:port/v1"


def register_backend(kind: str, *, summary: str = "", options: type[CommonOptions] | None = None
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: ``@register_backend("toy", options=ToyOptions)`` makes ``toy:...`` specs build with the decorated
    factory, called as ``factory(spec, ToyOptions(...))``. ``options`` (a :class:`CommonOptions` subclass, see
    :mod:`robusteval.models.options`) declares what the backend takes; without it, the common options only."""
    declared = options or (_BUILTIN[kind][1] if kind in _BUILTIN else CommonOptions)
    if not (isinstance(declared, type) and issubclass(declared, CommonOptions)):
        raise TypeError(f"register_backend({kind!r}): options must be a CommonOptions subclass, got {declared!r}")
    return BACKENDS.register(kind, summary=summary, options=declared)


def options_class(kind: str) -> type[CommonOptions]:
    """The options class of backend ``kind`` (a built-in one without importing the backend)."""
    if kind in _BUILTIN:
        return _BUILTIN[kind][1]
    declared: type[CommonOptions] = BACKENDS.get(kind).meta.get("options", CommonOptions)
    return declared


def builtin_options_classes() -> dict[str, type[CommonOptions]]:
    """The built-in backends' options classes, by kind (whatever else is installed)."""
    return {kind: options for kind, (_, options) in _BUILTIN.items()}


def backend_options_classes() -> dict[str, type[CommonOptions]]:
    """Every registered backend's options class, by kind."""
    return {kind: options_class(kind) for kind in BACKENDS.names()}


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


#: The legacy keyword holding hf's ``from_pretrained`` options as one dict (``model_args={"revision": "abc"}``):
#: still accepted, spread into the options class's ``from_pretrained`` fields.
LEGACY_MODEL_ARGS = "model_args"


class OptionError(UserError):
    """A model option refused by :func:`resolve_options`; ``option`` names it (a study file points at its line)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def spec_kind(spec: str | ModelSpec) -> str:
    return spec.kind if isinstance(spec, ModelSpec) else spec.partition(":")[0]


def resolve_options(spec: str | ModelSpec, options: Mapping[str, Any]) -> CommonOptions:
    """``options`` (``load_model`` keywords, a study's model keys, the command line's) as the options class of
    ``spec``'s backend, checked before anything loads. An option of another registered backend is accepted and
    ignored (one option set fits every spec a command loads: a local model and an API judge); a name no backend
    takes, or a value of the wrong kind, is one UserError naming the option and the backend."""
    from robusteval.config import ConfigError, did_you_mean

    kind = spec_kind(spec)
    declared = options_class(kind)
    values = {**(spec.options if isinstance(spec, ModelSpec) else {}), **options}
    values = _spread_model_args(kind, declared, values)
    own = option_fields(declared)
    others = {name: (other, cls) for other, cls in backend_options_classes().items() if other != kind
              for name in specific_fields(cls) if name not in own}
    for name, value in values.items():
        if name not in own and name not in others:
            hint = did_you_mean(name, [*own, *others])
            raise OptionError(name, f"unknown model option {name}{hint} for the {kind} backend; {kind} options: "
                              f"{', '.join(own)}")
        if name in others:
            other, cls = others[name]
            problem = value_problem(cls, name, value)
            if problem is not None:
                raise OptionError(name, f"{name}: {problem} ({other} backend)")
    try:
        return declared(**{k: v for k, v in values.items() if k in own and v is not None})
    except ConfigError as exc:
        raise OptionError(exc.field, f"{exc.field}: {exc.problem} ({kind} backend)") from None


def _spread_model_args(kind: str, declared: type[CommonOptions], values: dict[str, Any]) -> dict[str, Any]:
    """``model_args={...}`` as the ``from_pretrained`` options it names (an empty or absent one: nothing)."""
    legacy = values.pop(LEGACY_MODEL_ARGS, None)
    if not legacy:
        return values
    if not isinstance(legacy, Mapping):
        raise OptionError(LEGACY_MODEL_ARGS, f"{kind} backend: {LEGACY_MODEL_ARGS}: expected a table of "
                          f"from_pretrained options, got {legacy!r}")
    pretrained = [n for n, f in option_fields(declared).items() if f.metadata.get("from_pretrained")]
    if not pretrained:
        return values  # another backend's options: ignored, as theirs always were
    unknown = sorted(set(legacy) - set(pretrained))
    if unknown:
        raise OptionError(LEGACY_MODEL_ARGS, f"{kind} backend: {LEGACY_MODEL_ARGS}: unknown key(s) "
                          f"{', '.join(unknown)}; {kind} accepts {', '.join(pretrained)}")
    return {**values, **legacy}


def parse_model_args(given: str | Mapping[str, Any] | None, *, kind: str | None = None,
                     what: str = "--model-args") -> dict[str, Any]:
    """``KEY=VALUE,...`` (or a TOML table of them) as typed options: each key an option of some registered
    backend (``kind``'s own first), its value read as that option's class declares it
    (``timeout=30`` -> 30.0, ``trust_remote_code=true`` -> True). One UserError naming the key otherwise."""
    from robusteval.config import did_you_mean
    from robusteval.models.options import value_from_text

    if not given:
        return {}
    pairs: dict[str, Any] = {}
    if isinstance(given, Mapping):
        pairs = dict(given)
    else:
        for part in (p.strip() for p in given.split(",")):
            key, eq, value = part.partition("=")
            if part and (not eq or not key.strip()):
                raise UserError(f"{what}: '{part}' is not KEY=VALUE")
            if part:
                pairs[key.strip()] = value
    classes = backend_options_classes()
    ordered = sorted(classes.items(), key=lambda item: item[0] != kind)
    declaring: dict[str, tuple[str, type[CommonOptions]]] = {}
    for backend, cls in ordered:
        for name in option_fields(cls):
            declaring.setdefault(name, (backend, cls))
    out: dict[str, Any] = {}
    for key, value in pairs.items():
        if key not in declaring:
            hint = did_you_mean(key, declaring)
            own = f"; {kind} options: {', '.join(specific_fields(classes[kind]))}" if kind in classes else ""
            raise UserError(f"{what}: unknown model option {key}{hint} for the {kind or 'model'} backend{own}")
        backend, cls = declaring[key]
        hint_type = annotation(cls, key)
        try:
            typed = value_from_text(value, hint_type) if isinstance(value, str) else value
        except ValueError as exc:
            raise UserError(f"{what}: {key}: {exc} ({backend} backend)") from None
        problem = value_problem(cls, key, typed)
        if problem is not None:
            raise UserError(f"{what}: {key}: {problem} ({backend} backend)")
        out[key] = typed
    return out


def options_reference() -> str:
    """The options of every registered backend as markdown (docs/backends.md holds this text; a test keeps it so):
    the common ones, then each backend's own ``--model-args``."""
    from robusteval.models.options import options_table

    parts = ["### Common options (flags of their own: `--dtype`, `--device`, `--batch-size`, `--max-memory`, "
             "`--thinking`)", "", options_table(CommonOptions, common=True)]
    for kind, cls in sorted(backend_options_classes().items()):
        parts += ["", f"### `{kind}`: `--model-args` ({cls.__name__})", "", (cls.__doc__ or "").strip().splitlines()[0].replace("``", "`"),
                  "", options_table(cls)]
    return "\n".join(parts) + "\n"


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
