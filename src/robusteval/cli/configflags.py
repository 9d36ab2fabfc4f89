"""Command-line flags from a config dataclass, and the dataclass back from the parsed flags.

Flags map 1:1 onto fields (``--insert-ratio`` <-> ``insert_ratio``), so the CLI, ``--config`` TOML files and
the Python API describe a run with the same names, and a new field is a new flag with no CLI code.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, TypeVar

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


def _flag(field: dataclasses.Field[Any]) -> str:
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


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
                         choices: dict[str, list[str]] | None = None) -> None:
    """One flag per CLI field of ``config_type``; fields declared with ``cli=False`` (nested configs such as a
    DataSpec, values the command derives) are left to the caller. ``choices`` overrides a field's choices."""
    target = parser.add_argument_group(group) if group else parser
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        meta = field.metadata
        if field.name in skip or not meta.get("cli", True):
            continue
        if meta.get("nested"):
            add_config_arguments(parser, hints[field.name], skip=skip, required=required, choices=choices,
                                 group=None if field.name == "data" else field.name)
            continue
        kind = _scalar_type(field.type)
        flag = _flag(field)
        kwargs: dict[str, Any] = {"dest": field.name, "help": meta.get("help") or None}
        if kind is bool:
            if meta.get("negate"):
                target.add_argument(meta["negate"], action="store_false", **kwargs)
            else:
                target.add_argument(flag, action="store_true", **kwargs)
            parser.set_defaults(**{field.name: field.default})
            continue
        kwargs["type"] = kind
        if (choices or {}).get(field.name) or meta.get("choices"):
            kwargs["choices"] = list((choices or {}).get(field.name) or meta["choices"])
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        if field.name in required or field.default is dataclasses.MISSING:
            required_option(target, flag, **kwargs)
        else:
            target.add_argument(flag, default=field.default, **kwargs)


def config_from_args(config_type: type[C], args: argparse.Namespace, **values: Any) -> C:
    """``config_type`` filled from the parsed flags; ``values`` give the fields the flags do not (nested
    configs, derived values)."""
    kwargs = {}
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):  # type: ignore[arg-type]
        if field.name in values:
            kwargs[field.name] = values[field.name]
        elif field.metadata.get("nested"):
            kwargs[field.name] = config_from_args(hints[field.name], args)
        elif hasattr(args, field.name):
            kwargs[field.name] = getattr(args, field.name)
    return config_type(**kwargs)
