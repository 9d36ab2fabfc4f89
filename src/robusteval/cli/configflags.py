"""Command-line flags from a config dataclass, and the dataclass back from the parsed flags.

Flags map 1:1 onto fields (``--insert-ratio`` <-> ``insert_ratio``), so the CLI, ``--config`` TOML files and
the Python API describe a run with the same names, and a new field is a new flag with no CLI code.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

from robusteval.config import CONFIG_KEY, MORE, ConfigError, flag_of

C = TypeVar("C")

#: The parser default that lists the (dest, flag) of every :func:`required_option`, checked after ``--config``.
_REQUIRED = "_required_flags"


def required_option(parser: argparse.ArgumentParser | Any, *names: str, **kwargs: Any) -> None:
    """An option that must be set on the command line *or* in the config file (``parser`` may be an argument
    group of a command's parser).

    argparse's own ``required=True`` would reject a value that comes from the config file.
    """
    action = parser.add_argument(*names, default=None, **kwargs)
    action.help = (action.help or "") + " (required)"
    # A group's parser is argparse's private _argument_group_container, which typeshed does not declare: Any.
    owner: Any = parser
    while not hasattr(owner, "get_default"):
        owner = owner._argument_group_container
    owner.get_default(_REQUIRED).append((action.dest, action.option_strings[0]))


#: The attribute of a parser that holds the help ``--help`` leaves out, shown by ``--help-all``.
_HIDDEN = "_robusteval_hidden_help"


def _root(parser: argparse.ArgumentParser | Any) -> argparse.ArgumentParser:
    """The parser an argument group belongs to (argparse's private container, which typeshed does not declare)."""
    owner: Any = parser
    while not hasattr(owner, "get_default"):
        owner = owner._argument_group_container
    return owner


def _hide(parser: argparse.ArgumentParser | Any, action: argparse.Action, full: str | None) -> None:
    """Leave ``action`` out of ``--help``; ``--help-all`` shows it with the help ``full``."""
    root = _root(parser)
    hidden: dict[argparse.Action, str | None] = root.__dict__.setdefault(_HIDDEN, {})
    hidden[action] = full
    action.help = argparse.SUPPRESS


def hide_flags(parser: argparse.ArgumentParser, flags: Iterable[str]) -> None:
    """Leave the options ``flags`` (those the parser has) out of ``--help``, for ``--help-all`` to show."""
    wanted = set(flags)
    for action in parser._actions:
        if wanted & set(action.option_strings) and action.help != argparse.SUPPRESS:
            _hide(parser, action, action.help)


class _HelpAll(argparse.Action):
    """``--help-all``: the help with every option, those ``--help`` leaves out included."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(full_help(parser), end="")
        parser.exit()


#: Where every option of every method's config is documented (generated: robusteval.configref).
CONFIG_REFERENCE = "docs/config-reference.md"


def narrow_help(parser: argparse.ArgumentParser, hide: Iterable[str] = (), *, search: bool = True) -> None:
    """Leave the options ``hide`` out of ``parser``'s ``--help`` too, give it ``--help-all`` (every option) and
    point its epilog at the config reference, which documents the settings ``--help`` leaves to ``--config``
    (``search``: the command has search settings and presets)."""
    hide_flags(parser, hide)
    parser.add_argument("--help-all", action=_HelpAll,
                        help="show every option, those this help leaves out (backend details, deprecated flags)")
    if not search:
        parser.epilog = ((parser.epilog or "") + f"\n\nevery key, its type, default and meaning: {CONFIG_REFERENCE}"
                         ).lstrip()
        return
    parser.epilog = ((parser.epilog or "") + "\n\nsearch settings (steps, ratios, ...): a --config TOML file or "
                     f"--preset; every key, its type,\ndefault and meaning: {CONFIG_REFERENCE}").lstrip()


def full_help(parser: argparse.ArgumentParser) -> str:
    """The help of ``parser`` with the options its ``--help`` leaves out."""
    hidden: dict[argparse.Action, str | None] = getattr(parser, _HIDDEN, {})
    for action, text in hidden.items():
        action.help = text
    try:
        return parser.format_help()
    finally:
        for action in hidden:
            action.help = argparse.SUPPRESS


def _deprecated(base: type[argparse.Action], notice: str) -> type[argparse.Action]:
    """``base`` (a store action) that prints ``notice`` to stderr when its flag is used (once per process: a
    command line is parsed again after ``--config``)."""

    class Deprecated(base):  # type: ignore[valid-type,misc]
        told = False

        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            if not Deprecated.told:
                Deprecated.told = True
                print(notice, file=sys.stderr)
            super().__call__(parser, namespace, values, option_string)

    return Deprecated


def deprecated_flag(flag: str, instead: str) -> str:
    """The one line a deprecated flag prints (every deprecated flag the same way): ``instead``, what to do."""
    return f"robusteval: {flag} is deprecated (accepted until the next release): {instead}"


def deprecation_notice(config_type: type, field: dataclasses.Field[Any], flag: str) -> str:
    """The line a deprecated flag prints: what replaces it, a ``--config`` key (and the presets that set it)."""
    key = f"{field.name} = false" if field.metadata.get("negate") else field.name
    setting = getattr(config_type, "presets_setting", None)
    presets = setting(field.name) if callable(setting) else []
    instead = f" or use --preset {'|'.join(presets)}" if presets else ""
    return deprecated_flag(flag, f"set {key} in --config{instead}")


def _scalar_type(annotation: Any) -> Any:
    """int / float / str / bool from ``int | None`` and friends (annotations are strings under PEP 563)."""
    if isinstance(annotation, str):
        text = annotation.replace(" ", "")
        for name, kind in (("bool", bool), ("int", int), ("float", float), ("str", str)):
            if text in (name, f"{name}|None", f"None|{name}", f"Optional[{name}]"):
                return kind
        return str
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _scalar_type(inner[0]) if len(inner) == 1 else str
    return annotation if annotation in (bool, int, float, str) else str


def add_config_arguments(parser: argparse.ArgumentParser | Any, config_type: type, *, skip: tuple[str, ...] = (),
                         required: tuple[str, ...] = (), group: str | None = None,
                         choices: dict[str, list[str]] | None = None, only: tuple[str, ...] | None = None,
                         defaults: dict[str, Any] | None = None, shown: tuple[str, ...] = ()) -> None:
    """One flag per CLI field of ``config_type``; fields declared with ``cli=False`` (nested configs such as a
    DataSpec, values the command derives) are left to the caller. ``choices`` overrides a field's choices. A
    ``cli=MORE`` field's flag is left out of ``--help`` (``--help-all`` shows it); a ``cli=CONFIG_KEY`` field's
    flag too, and it is deprecated: using it prints one line naming the ``--config`` key that replaces it. A shared
    block (``generation``) gives the keys its config reads (``only``), that config's ``defaults``, shown in their
    help, and the keys its command ``shown`` as plain flags whatever the block's tier."""
    target = parser.add_argument_group(group) if group else parser
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        meta = field.metadata
        tier = True if field.name in shown else meta.get("cli", True)
        if field.name in skip or not tier or (only is not None and field.name not in only):
            continue
        if meta.get("nested"):
            add_config_arguments(parser, hints[field.name], skip=skip, required=required, choices=choices,
                                 group=None if field.name == "data" else field.name, only=meta.get("keys"),
                                 defaults=meta.get("defaults"), shown=meta.get("shown", ()))
            continue
        kind = _scalar_type(field.type)
        flag = flag_of(field)
        text = meta.get("help") or None
        if text and field.name in (defaults or {}):
            text = f"{text} (default {(defaults or {})[field.name]})"
        kwargs: dict[str, Any] = {"dest": field.name, "help": text}
        if kind is bool:
            action: Any = argparse._StoreFalseAction if meta.get("negate") else argparse._StoreTrueAction
        else:
            action = argparse._StoreAction
            kwargs["type"] = kind
            if (choices or {}).get(field.name) or meta.get("choices"):
                kwargs["choices"] = list((choices or {}).get(field.name) or meta["choices"])
            if meta.get("metavar"):
                kwargs["metavar"] = meta["metavar"]
        if tier == CONFIG_KEY:
            notice = deprecation_notice(config_type, field, flag)
            action = _deprecated(action, notice)
            kwargs["help"] = f"{text or ''} [deprecated flag: {notice.partition('; ')[2]}]".strip()
        if kind is not bool and (field.name in required or field.default is dataclasses.MISSING):
            required_option(target, flag, action=action, **kwargs)
            continue
        added = target.add_argument(flag, action=action, **kwargs)
        if kind is bool:
            parser.set_defaults(**{field.name: field.default})
        else:
            added.default = field.default
        if tier in (MORE, CONFIG_KEY):
            _hide(parser, added, added.help)  # the parser: a group of flags keeps no link to it


def config_from_args(config_type: type[C], args: argparse.Namespace, only: tuple[str, ...] | None = None,
                     **values: Any) -> C:
    """``config_type`` filled from the parsed flags; ``values`` give the fields the flags do not (nested
    configs, derived values); ``only``: the fields read (a shared block's keys its config reads)."""
    kwargs = {}
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):  # type: ignore[arg-type]
        if field.name in values:
            kwargs[field.name] = values[field.name]
        elif field.metadata.get("nested"):
            try:
                kwargs[field.name] = config_from_args(hints[field.name], args, field.metadata.get("keys"))
            except ConfigError as exc:
                if field.metadata.get("keys") is None:
                    raise
                # A shared block's key named as its command names it (judges audit's --judge-retries).
                raise ConfigError(config_type, exc.field, exc.problem) from None
        elif only is not None and field.name not in only:
            continue
        elif hasattr(args, field.name):
            kwargs[field.name] = getattr(args, field.name)
    return config_type(**kwargs)
