"""Typed configs: frozen dataclasses whose fields carry their CLI flag, help text and choices.

A pipeline's config is the single description of a run: the CLI builds its flags from the fields
(``robusteval.cli.configflags``), a notebook builds the dataclass directly, and ``identity()`` turns it
into the run identity. ``option(...)`` is ``dataclasses.field`` with that metadata.

Every config checks its values when it is built (``__post_init__``) and refuses a bad one with a
:class:`ConfigError`, which names the field the way each audience knows it: the API's message says
``MatchaRunConfig.target_answer``, :meth:`ConfigError.cli_message` (what the CLI prints) says ``--target-answer``.
One check, two wordings: a config never mentions a flag itself.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from robusteval.errors import UserError

C = TypeVar("C")

#: ``option(identity=WHEN_SET)``: in the run identity only when set (not None).
WHEN_SET = "when-set"
#: ``option(cli=MORE)``: a flag that ``--help`` leaves to ``--help-all`` (a setting most runs leave alone).
MORE = "more"
#: ``option(cli=CONFIG_KEY)``: a key of ``--config`` files, presets and study files; its flag is still accepted for
#: one release, hidden from ``--help`` and deprecated (each use prints one line naming the key that replaces it).
CONFIG_KEY = "config"


def option(default: Any = dataclasses.MISSING, *, help: str = "", flag: str | None = None,
           choices: Sequence[Any] | None = None, metavar: str | None = None, cli: bool | str = True,
           negate: str | None = None, identity: bool | str = True) -> Any:
    """A config field. ``flag`` overrides ``--field-name``; ``negate`` makes a bool default-True field a
    ``--no-…`` switch; ``cli=False`` keeps it out of the command line, ``cli=MORE`` out of ``--help`` (shown by
    ``--help-all``), ``cli=CONFIG_KEY`` makes it a config-file key whose flag is deprecated (see
    :data:`CONFIG_KEY`); ``identity=False`` keeps it out of the
    run identity (settings that do not change results, such as a batch size); ``identity="when-set"`` puts it
    in only when it is not None (an option added later that must leave existing identities and cache keys
    as they were while unset)."""
    if identity not in (True, False, WHEN_SET):
        raise TypeError(f"identity must be True, False or {WHEN_SET!r}, got {identity!r}")
    if cli not in (True, False, MORE, CONFIG_KEY):
        raise TypeError(f"cli must be True, False, {MORE!r} or {CONFIG_KEY!r}, got {cli!r}")
    metadata = {"help": help, "flag": flag, "choices": tuple(choices) if choices else None, "metavar": metavar,
                "cli": cli, "negate": negate, "identity": identity}
    if isinstance(default, list | dict | set):
        raise TypeError("use a tuple or None for container defaults (configs are frozen)")
    return dataclasses.field(default=default, metadata=metadata)


def nested(*, flags: bool = True, default_factory: Callable[[], Any] | None = None, keys: Sequence[str] | None = None,
           defaults: Mapping[str, Any] | None = None, flat: bool = False, unrecorded: Sequence[str] = (),
           shown: Sequence[str] = ()) -> Any:
    """A field holding another config (a DataSpec, ...): declare it first. Its fields become flags of the same
    command (``flags=False``: the command adds them itself). Required, unless ``default_factory`` builds a default
    (then keyword-only, so required fields may follow it: ``RobustnessConfig(data, sets)``).

    A shared block (``models.generation.GenerationOptions``) names the ``keys`` this config reads (the others are
    refused when set, and are no flags, keys or identity fields of it), the config's ``defaults`` of the keys left
    unset (None), and ``flat``: the config's constructor still takes the block's keys as its own keywords, with a
    deprecation notice (:func:`check_call`); ``unrecorded``: its keys this config's identity leaves out; ``shown``: its
    keys whose flags this config's command shows in ``--help`` as plain flags, whatever tier the block gives them
    (``cli=MORE``, ``cli=CONFIG_KEY``): the settings that command is about (``judges audit``'s judge options)."""
    metadata = {"cli": flags, "nested": True, "identity": True, "keys": tuple(keys) if keys is not None else None,
                "defaults": dict(defaults or {}), "flat": flat, "unrecorded": tuple(unrecorded),
                "shown": tuple(shown)}
    if default_factory is None:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default_factory=default_factory, kw_only=True, metadata=metadata)


def shared_block(options: type, all_keys: Sequence[str], keys: Sequence[str],
                 defaults: Mapping[str, Any] | None = None, unrecorded: Sequence[str] = (),
                 shown: Sequence[str] = ()) -> Any:
    """The field of a method's config holding a shared block of type ``options`` (generation, judging, prompt):
    the ``keys`` of ``all_keys`` the method reads, its ``defaults`` of those left unset, the keys its identity
    leaves ``unrecorded`` and those its ``--help`` shows as plain flags (``shown``; see :func:`nested`); a key
    outside the block, or a default (or a shown key) of a key not read, is a programming error (TypeError, at
    import)."""
    defaults = dict(defaults or {})
    unknown = sorted((set(keys) | set(defaults) | set(unrecorded) | set(shown)) - set(all_keys))
    if unknown or not set(defaults) | set(shown) <= set(keys):
        raise TypeError(f"{options.__name__} block: {', '.join(unknown) or 'a default of a key not read'}: keys "
                        f"are {', '.join(all_keys)}")
    return nested(default_factory=lambda: options(**defaults), keys=keys, defaults=defaults, flat=True,
                  unrecorded=unrecorded, shown=shown)


def filled(config: Any, name: str) -> Any:
    """``config.name``, which a method's block default fills; a ConfigError when it is unset all the same."""
    value = getattr(config, name)
    if value is None:
        raise ConfigError(config, name, "unset, and the method gives it no default: set it")
    return value


def identity_fields(config: Any) -> dict[str, Any]:
    """The config's fields that change results, as plain JSON-able values. Nested configs are flattened into
    the parent (a DataSpec contributes dataset, data_file, data_sha256, fields), as run identities always were."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        mark = field.metadata.get("identity", True)
        value = getattr(config, field.name)
        if not mark or (mark == WHEN_SET and value is None):
            continue
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            inner = value.identity() if hasattr(value, "identity") else identity_fields(value)
            keys, unrecorded = field.metadata.get("keys"), field.metadata.get("unrecorded", ())
            out.update({k: v for k, v in inner.items() if (keys is None or k in keys) and k not in unrecorded})
            continue
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def reference_value(value: Any) -> str:
    """A setting's value as a ``--config`` file writes it (TOML: ``true``, ``"gold"``, ``0.25``), for the config
    reference; None: unset."""
    import json

    return "unset" if value is None else f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"


def reference_cell(text: str) -> str:
    """``text`` as one cell of a markdown table (one line, ``|`` escaped; empty: ``-``)."""
    return " ".join(text.split()).replace("|", "\\|") or "-"


# ------------------------------------------------------------------------------------------ validation
def flag_of(field: dataclasses.Field[Any]) -> str:
    """The command-line flag of a config field: its ``flag``, the ``negate`` switch of a default-True bool, or
    ``--field-name``."""
    return field.metadata.get("flag") or field.metadata.get("negate") or "--" + field.name.replace("_", "-")


def _find_field(config_type: type, name: str) -> dataclasses.Field[Any] | None:
    """The field ``name`` of ``config_type`` or of a config nested in it (a DataSpec's ``limit``)."""
    if not dataclasses.is_dataclass(config_type):
        return None
    hints: dict[str, Any] | None = None
    for field in dataclasses.fields(config_type):
        if field.name == name:
            return field
    for field in dataclasses.fields(config_type):
        if field.metadata.get("nested"):
            hints = hints if hints is not None else typing.get_type_hints(config_type)
            found = _find_field(hints[field.name], name)
            if found is not None:
                return found
    return None


def _shown(config_type: type, name: str) -> bool:
    """Whether a shared block of ``config_type`` makes ``name`` one of the command's plain flags (``shown``)."""
    return dataclasses.is_dataclass(config_type) and any(
        name in field.metadata.get("shown", ()) for field in dataclasses.fields(config_type))


#: ``{field}`` or ``{field=value}`` in a ConfigError's problem text: another field of the same config.
_MENTION = re.compile(r"\{(\w+)(?:=([^{}]*))?\}")


class ConfigError(UserError, ValueError):
    """A config value that cannot work (also a ``ValueError``, so ``except ValueError`` catches it), named by its
    field: ``MatchaRunConfig.target_answer: 'cleen' is not one
    of gold, clean, auto``. The CLI prints :meth:`cli_message` instead, the same text with flags
    (``--target-answer: 'cleen' is not one of gold, clean, auto``).

    ``problem`` may mention other fields of the config as ``{name}`` or ``{name=value}``: the API reads
    ``name`` / ``name=value``, the command line ``--name`` / ``--name value`` (a bool set to True: the flag alone).
    Mentions of names that are not fields stay as they are.
    """

    def __init__(self, config: type | object, field: str, problem: str) -> None:
        self.config_type: type = config if isinstance(config, type) else type(config)
        self.field = field
        self.problem = problem
        super().__init__(self._render(cli=False))

    def cli_message(self) -> str:
        """The message in the command line's words (flags instead of field names)."""
        return self._render(cli=True)

    def _name(self, name: str, value: str | None, *, cli: bool) -> str | None:
        field = _find_field(self.config_type, name)
        if field is None:
            return None
        if not cli or (field.metadata.get("cli", True) in (False, CONFIG_KEY) and not _shown(self.config_type, name)):
            return name if value is None else f"{name}={value}"
        flag = flag_of(field)
        if value is None or value == "True" or (value == "False" and field.metadata.get("negate")):
            return flag  # a switch: the flag alone (a default-True bool's flag is its --no-... switch)
        return f"{flag} {value}"

    def _render(self, *, cli: bool) -> str:
        def mention(match: re.Match[str]) -> str:
            return self._name(match[1], match[2], cli=cli) or match[0]

        subject = self._name(self.field, None, cli=cli) if cli else None
        subject = subject or f"{self.config_type.__name__}.{self.field}"
        return f"{subject}: {_MENTION.sub(mention, self.problem)}"


def check_choice(config: object, name: str, choices: Iterable[Any]) -> None:
    """Refuse a value of ``config.name`` outside ``choices`` (None passes: "unset"), listing them all."""
    value = getattr(config, name)
    allowed = list(choices)
    if value is not None and value not in allowed:
        hint = did_you_mean(str(value), [str(c) for c in allowed])
        raise ConfigError(config, name, f"{value!r} is not one of {', '.join(map(str, allowed))}{hint}")


def check_choices(config: object) -> None:
    """:func:`check_choice` for every field declared with ``choices``."""
    for field in dataclasses.fields(config):  # type: ignore[arg-type]
        if field.metadata.get("choices"):
            check_choice(config, field.name, field.metadata["choices"])


def check_at_least(config: object, name: str, minimum: float, *, optional: bool = True) -> None:
    """Refuse ``config.name`` below ``minimum`` (or not a number); None passes when ``optional``."""
    value = getattr(config, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= minimum:
        raise ConfigError(config, name, f"must be a number >= {minimum:g}, got {value!r}")


def check_positive(config: object, name: str, *, optional: bool = True) -> None:
    """Refuse ``config.name`` unless it is a number > 0; None passes when ``optional``."""
    value = getattr(config, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(config, name, f"must be a number > 0, got {value!r}")


def check_chat(config: object) -> None:
    """A system prompt only exists in a chat: refuse ``system_prompt`` without ``chat`` rather than ignore it."""
    if getattr(config, "system_prompt", None) is not None and not getattr(config, "chat", False):
        raise ConfigError(config, "system_prompt", "needs {chat=True} (a system prompt is a turn of the chat "
                          "conversation)")


@contextmanager
def field_check(config: object, name: str) -> Iterator[None]:
    """Run a shared check (a judge spec, a grader name) as a check of ``config.name``: its UserError becomes
    that field's ConfigError."""
    try:
        yield
    except ConfigError:
        raise
    except UserError as exc:
        raise ConfigError(config, name, str(exc)) from None


# ------------------------------------------------------------------------------------------ names and types
def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean steps?)`` for the closest of ``known`` to ``name``, or "": the hint every refusal of a
    name carries (a config's keyword, a flag in a config file, a study key, a stage)."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def value_kinds(annotation: Any) -> set[type]:
    """The plain kinds a field's annotation admits: bool, int, float, str, tuple, dict (anything else counts as
    str, the way its flag is typed); empty for None alone."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return {k for a in typing.get_args(annotation) for k in value_kinds(a)}
    origin = typing.get_origin(annotation)
    if origin is not None:
        return {origin if origin in (tuple, dict) else str}
    if annotation is type(None):
        return set()
    return {annotation} if annotation in (bool, int, float, str) else {str}


def describe_kinds(kinds: set[type]) -> str:
    """``a whole number or a string``: the kinds as a user reads them."""
    names = {bool: "true/false", int: "a whole number", float: "a number", str: "a string", tuple: "a list",
             dict: "a table"}
    return " or ".join(names[k] for k in (bool, int, float, str, tuple, dict) if k in kinds) or "a value"


def type_problem(value: Any, annotation: Any) -> str | None:
    """Why ``value`` does not fit a scalar field annotated ``annotation`` (``expected a whole number, got 2.5``),
    or None when it fits or the annotation is no plain scalar (a tuple, a nested config, ``Any``: checked by
    the config's own ``__post_init__``)."""
    optional = type(None) in typing.get_args(annotation)
    kinds = value_kinds(annotation)
    if not kinds or not kinds <= {bool, int, float, str} or _is_open(annotation):
        return None
    if value is None:
        return None if optional else f"expected {describe_kinds(kinds)}, got None"
    if isinstance(value, bool):
        fits = bool in kinds
    elif isinstance(value, int):
        fits = int in kinds or float in kinds
    elif isinstance(value, float):
        fits = float in kinds
    elif isinstance(value, str | os.PathLike):
        fits = str in kinds
    else:
        fits = False
    return None if fits else f"expected {describe_kinds(kinds)}, got {value!r}"


def _is_open(annotation: Any) -> bool:
    """An annotation that admits more than plain scalars (``Any``, a class other than the four scalars)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return any(_is_open(a) for a in typing.get_args(annotation))
    return annotation is not type(None) and annotation not in (bool, int, float, str)


@functools.cache
def _hints(config_type: type) -> dict[str, Any]:
    return typing.get_type_hints(config_type)


def check_call(config_type: type, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords a call of ``config_type(*args, **kwargs)`` gives each field, checked before the dataclass is
    built: unknown names (with a suggestion), missing required fields, a value of the wrong kind for a scalar
    field, a nested config given as anything but that config. A path may be a ``Path``: it becomes the ``str``
    the field holds. Raises :class:`ConfigError`."""
    fields = [f for f in dataclasses.fields(config_type) if f.init]
    names = [f.name for f in fields]
    positional = [f.name for f in fields if not f.kw_only]
    if len(args) > len(positional):
        raise ConfigError(config_type, positional[-1], f"takes at most {len(positional)} values by position, got "
                          f"{len(args)}")
    values = dict(zip(positional, args, strict=False))
    flat: dict[str, dict[str, Any]] = {}  # a shared block's keys given as the config's own keywords
    for name, value in kwargs.items():
        block = None if name in names else block_of(config_type, name)
        if block is not None:
            flat.setdefault(block, {})[name] = value
            continue
        if name not in names:
            nested_in = next((f.name for f in fields if f.metadata.get("nested")
                              and name in (f.metadata.get("keys") or (name,))
                              and _find_field(_hints(config_type)[f.name], name) is not None), None)
            where = f"; it is an option of {nested_in}={_hints(config_type)[nested_in].__name__}(...)" if nested_in else ""
            hint = did_you_mean(name, names)
            raise ConfigError(config_type, name, f"unknown option{hint}{where}" if hint or where
                              else f"unknown option; options: {', '.join(names)}")
        if name in values:
            raise ConfigError(config_type, name, "given twice (by position and by name)")
        values[name] = value
    hints = _hints(config_type)
    for block, given in flat.items():
        keywords = ", ".join(f"{k}=..." for k in given)
        warnings.warn(f"{config_type.__name__}({keywords}) is deprecated (accepted until the next release): give "
                      f"{block}={_hints(config_type)[block].__name__}({keywords})", DeprecationWarning,
                      stacklevel=3)  # shown at the line that called Config(...)
        field = next(f for f in fields if f.name == block)
        inner = values.get(block)
        base = inner if isinstance(inner, hints[block]) else field.default_factory()  # type: ignore[operator]
        try:
            values[block] = dataclasses.replace(base, **given)
        except ConfigError as exc:  # named as the caller named it: TransferConfig.temperature
            raise ConfigError(config_type, exc.field, exc.problem) from None
    for field in fields:
        if field.name in values and field.metadata.get("keys") is not None:
            values[field.name] = _block_value(config_type, field, values[field.name], hints[field.name])
        if field.name not in values:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise ConfigError(config_type, field.name, "required: no default")
            continue
        value = values[field.name]
        annotation = hints[field.name]
        if field.metadata.get("nested"):
            if not isinstance(value, annotation):
                raise ConfigError(config_type, field.name, f"expected a {annotation.__name__} (robusteval."
                                  f"{annotation.__name__}(...)), got {type(value).__name__} {value!r}")
            continue
        problem = type_problem(value, annotation)
        if problem is not None:
            raise ConfigError(config_type, field.name, problem)
        if isinstance(value, os.PathLike) and str in value_kinds(annotation):
            values[field.name] = os.fspath(value)
    return values


def block_of(config_type: type, name: str) -> str | None:
    """The ``flat`` shared block of ``config_type`` (its field name) that reads the key ``name``, or None."""
    if not dataclasses.is_dataclass(config_type):
        return None
    for field in dataclasses.fields(config_type):
        keys = field.metadata.get("keys")
        if field.metadata.get("flat") and keys is not None and name in keys:
            return field.name
    return None


def with_options(config: C, values: Mapping[str, Any]) -> C:
    """``config`` with ``values`` (field names, a shared block's keys flat: ``max_new_tokens``) replaced, each in
    its place: a sweep's grid point."""
    own = {k: v for k, v in values.items() if block_of(type(config), k) is None}
    for name, value in values.items():
        block = block_of(type(config), name)
        if block is not None:
            own[block] = dataclasses.replace(own.get(block, getattr(config, block)), **{name: value})
    return dataclasses.replace(config, **own)  # type: ignore[type-var]


def fill_unset(config: object, values: Mapping[str, Any]) -> None:
    """Give each key of ``values`` that ``config`` leaves unset (None) its value, in the config's own field or in
    its shared block (a preset's values, a method's defaults): for a frozen config's ``__post_init__``."""
    for name, value in values.items():
        block = block_of(type(config), name)
        if block is None:
            if getattr(config, name) is None:
                object.__setattr__(config, name, value)
            continue
        inner = getattr(config, block)
        if getattr(inner, name) is None:
            object.__setattr__(config, block, dataclasses.replace(inner, **{name: value}))


def _block_value(config_type: type, field: dataclasses.Field[Any], value: Any, annotation: Any) -> Any:
    """A shared block as ``config_type`` holds it: the keys it does not read refused when set (one line naming
    the key), its defaults filled where the block leaves a key unset (None)."""
    if not isinstance(value, annotation):
        return value  # refused by the type check that follows
    keys = field.metadata["keys"]
    for inner in dataclasses.fields(value):
        if inner.name not in keys and getattr(value, inner.name) != inner.default:
            raise ConfigError(config_type, inner.name, f"is not a setting of {config_type.__name__} (its "
                              f"{field.name} settings: {', '.join(keys)})")
    unset = {k: v for k, v in field.metadata["defaults"].items() if getattr(value, k) is None}
    return dataclasses.replace(value, **unset) if unset else value


def validated(config_type: type[C]) -> type[C]:
    """Class decorator of a config dataclass (put it above ``@dataclass``): every call is checked by
    :func:`check_call` before the dataclass is built (then ``__post_init__`` checks the values), so a notebook
    meets the one-line, did-you-mean refusals of the command line and of study files."""
    build = config_type.__init__

    @functools.wraps(build)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        build(self, **check_call(config_type, args, kwargs))

    config_type.__init__ = __init__  # type: ignore[method-assign]
    return config_type


def path_list(value: Any, where: str) -> list[str | os.PathLike[str]]:
    """``value`` as a list of paths: one path (a ``str`` or ``Path``, never iterated character by character) or an
    iterable of them; anything else is a one-line UserError naming ``where`` (``results_frame()``)."""
    if isinstance(value, str | os.PathLike):
        return [value]
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise UserError(f"{where}: expected a path (a str or Path) or a list of them, got {type(value).__name__} "
                        f"{value!r}")
    items = list(value)
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise UserError(f"{where}: expected paths (str or Path), got {type(item).__name__} {item!r} among them")
    return items
