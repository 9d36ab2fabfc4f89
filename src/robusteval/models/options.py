"""Backend options, declared once per backend: a frozen dataclass each, registered with the backend.

Every backend's options class derives from :class:`CommonOptions` (what every backend understands: dtype,
device, batch size, memory, thinking) and adds its own fields with :func:`backend_option`. From these classes
come ``robusteval.load_model``'s keywords (checked by :func:`robusteval.models.registry.resolve_options`), the
command line's ``--model-args KEY=VALUE,...`` (typed here by :func:`value_from_text`), the keys of a study
file's ``[[models]]`` entries and the model's part of the run identity (:func:`recorded`). A new backend is one
options class and one factory (``@register_backend("kind", options=KindOptions)``).

Light on purpose (no torch, no httpx): the command line reads these classes to build its flags.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.config import (
    WHEN_SET,
    check_choices,
    describe_kinds,
    did_you_mean,
    type_problem,
    validated,
    value_kinds,
)

#: ``backend_option(identity=CHANGED)``: in the run identity only when it differs from its default (an option
#: added later: identities made before it stay as they were).
CHANGED = "changed"


def backend_option(default: Any, *, help: str, choices: Sequence[Any] | None = None, identity: bool | str = False,
                   replaces: str | None = None, from_pretrained: bool = False) -> Any:
    """A field of a backend's options class. ``identity``: whether the run identity records it (False: it does not
    change outputs, such as a timeout; True: always; ``when-set``: when not None; ``changed``: when not its default).
    ``replaces``: the command-line flag it had before ``--model-args`` (still accepted for one release, hidden, with
    a notice). ``from_pretrained``: handed to ``from_pretrained`` (hf) and recorded under ``model_args``."""
    if identity not in (True, False, WHEN_SET, CHANGED):
        raise TypeError(f"identity must be True, False, {WHEN_SET!r} or {CHANGED!r}, got {identity!r}")
    metadata = {"help": help, "flag": None, "choices": tuple(choices) if choices else None, "metavar": None,
                "cli": True, "negate": None, "identity": identity, "replaces": replaces,
                "from_pretrained": from_pretrained}
    return dataclasses.field(default=default, metadata=metadata)


@validated
@dataclass(frozen=True)
class CommonOptions:
    """Options every backend understands (a backend that has no use for one ignores it: an API backend has no
    dtype). On the command line they are flags of their own (``--dtype``, ``--device``, ...)."""

    dtype: str = backend_option("auto", help="auto (bfloat16 on a GPU, float32 on a CPU), float32, bfloat16, "
                                "float16 (local weights)")
    device: str = backend_option("auto", help="auto, cpu, cuda, cuda:1, ... (local weights)")
    batch_size: int = backend_option(8, help="rows per forward and generation (local weights)")
    max_memory: str | int | None = backend_option(
        None, help="the most memory this process should hold (4GB, 4GiB, 512MB); attack batches and scoring "
        "chunks are planned under it")
    thinking: str | None = backend_option(
        None, choices=("on", "off"), identity=CHANGED,
        help="a reasoning model's thinking switch, passed to its chat template as enable_thinking; unset: the "
        "template's default")

    def __post_init__(self) -> None:
        check_choices(self)
        self.check()

    def check(self) -> None:
        """A backend's own checks of its values (ranges, combinations): raise ``ConfigError(self, name, ...)``."""


def option_fields(options_type: type[CommonOptions]) -> dict[str, dataclasses.Field[Any]]:
    """Every option of ``options_type``, by name, the common ones first."""
    return {f.name: f for f in dataclasses.fields(options_type)}


def specific_fields(options_type: type[CommonOptions]) -> dict[str, dataclasses.Field[Any]]:
    """The options ``options_type`` adds to the common ones: what ``--model-args`` carries for it."""
    common = {f.name for f in dataclasses.fields(CommonOptions)}
    return {name: f for name, f in option_fields(options_type).items() if name not in common}


def annotation(options_type: type[CommonOptions], name: str) -> Any:
    return typing.get_type_hints(options_type)[name]


def value_from_text(text: str, hint: Any) -> Any:
    """``text`` (a ``--model-args`` value) as the kind ``hint`` declares: true/false, a whole number, a number,
    a string, or ``none`` for an optional non-string option. A ValueError says what was expected."""
    kinds = value_kinds(hint)
    stripped, lowered = text.strip(), text.strip().lower()
    if lowered in ("none", "null") and type(None) in typing.get_args(hint) and str not in kinds:
        return None
    if bool in kinds and lowered in ("true", "false"):
        return lowered == "true"
    if int in kinds and lowered.lstrip("+-").isdigit():
        return int(lowered)
    if float in kinds:
        try:
            return float(stripped)
        except ValueError:
            pass
    if str in kinds:
        return stripped
    raise ValueError(f"expected {describe_kinds(kinds)}, got {text.strip()!r}")


def value_problem(options_type: type[CommonOptions], name: str, value: Any) -> str | None:
    """Why ``value`` cannot be option ``name`` of ``options_type`` (its kind, its choices), or None: the checks
    ``options_type(...)`` makes, for an option checked without building the class (another backend's)."""
    if value is None:
        return None
    problem = type_problem(value, annotation(options_type, name))
    choices = option_fields(options_type)[name].metadata.get("choices")
    if problem is None and choices and value not in choices:
        problem = f"{value!r} is not one of {', '.join(map(str, choices))}{did_you_mean(str(value), choices)}"
    return problem


def recorded(options: CommonOptions) -> dict[str, Any]:
    """The options the run identity records (each field's ``identity``), as plain values; ``from_pretrained`` ones
    are the backend's to record (hf: under ``model_args``)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(options):
        mark, value = field.metadata.get("identity", False), getattr(options, field.name)
        if field.metadata.get("from_pretrained") or not mark:
            continue
        if (mark == WHEN_SET and value is None) or (mark == CHANGED and value == field.default):
            continue
        out[field.name] = value
    return out


def from_pretrained(options: CommonOptions) -> dict[str, Any]:
    """The ``from_pretrained`` options that are set, sorted by name (hf's ``model_args``)."""
    return {f.name: getattr(options, f.name) for f in sorted(dataclasses.fields(options), key=lambda f: f.name)
            if f.metadata.get("from_pretrained") and getattr(options, f.name) is not None}


def replaced_flags(options_type: type[CommonOptions]) -> dict[str, str]:
    """``{old flag: option}`` of the flags an options class's fields replace (``--request-timeout``: timeout)."""
    return {f.metadata["replaces"]: name for name, f in option_fields(options_type).items()
            if f.metadata.get("replaces")}


def _type_text(hint: Any) -> str:
    text = str(hint).replace("typing.", "").replace("NoneType", "None")
    return text.removeprefix("<class '").removesuffix("'>").replace(" | ", " or ")


def options_table(options_type: type[CommonOptions], *, common: bool = False) -> str:
    """A markdown table of ``options_type``'s options (the common ones with ``common``, else its own): what
    docs/backends.md shows per backend, generated from the class."""
    fields = option_fields(options_type) if common else specific_fields(options_type)
    rows = ["| option | type | default | run identity | replaces | what it does |", "|---|---|---|---|---|---|"]
    marks = {True: "yes", False: "", WHEN_SET: "when set", CHANGED: "when not the default"}
    for name, field in fields.items():
        choices = field.metadata.get("choices")
        what = field.metadata.get("help", "") + (f" ({' / '.join(choices)})" if choices else "")
        identity = "under model_args" if field.metadata.get("from_pretrained") else marks[field.metadata["identity"]]
        replaces = f"`{field.metadata['replaces']}`" if field.metadata.get("replaces") else ""
        rows.append(f"| `{name}` | {_type_text(annotation(options_type, name))} | `{field.default!r}` | {identity} | "
                    f"{replaces} | {what.replace('|', '/')} |")
    return "\n".join(rows)
