"""Config dataclasses from the flat options of a study file: which keys a method takes, values checked against
each field's type, nested configs (DataSpec, perturbation settings, grading) filled as the command line fills them.

Kept apart from ``cli/configflags.py`` (argparse) because a study is library code: the same names, no parser.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from robusteval.config import describe_kinds, value_kinds


def option_fields(config_type: type, only: tuple[str, ...] | None = None) -> dict[str, tuple[tuple[str, ...], Any]]:
    """Every option of ``config_type`` by field name: (the nested configs leading to it, its annotation), nested
    configs flattened as the command line flattens them (of a shared block, the keys its config reads: ``only``).
    A default-True switch is also known by its flag (``no_rank = true`` is ``rank = false``:
    :func:`negated_flags`)."""
    out: dict[str, tuple[tuple[str, ...], Any]] = {}
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        if only is not None and field.name not in only:
            continue
        if field.metadata.get("nested"):
            for name, (path, annotation) in option_fields(hints[field.name], field.metadata.get("keys")).items():
                out[name] = ((field.name, *path), annotation)
        elif field.metadata.get("cli", True):
            out[field.name] = ((), hints[field.name])
    for alias, name in negated_flags(config_type).items():
        out[alias] = out[name]
    return out


def negated_flags(config_type: type) -> dict[str, str]:
    """``{"no_rank": "rank"}``: the ``--no-...`` switches of default-True fields, as keys, and their fields."""
    return {field.metadata["negate"].lstrip("-").replace("-", "_"): field.name
            for field in dataclasses.fields(config_type) if field.metadata.get("negate")}


def shared_blocks_flat(config_type: type, table: Mapping[str, Any]) -> dict[str, Any]:
    """A method's table with the sub-table of a shared block (``[methods.eval.generation]``) read as its flat keys."""
    blocks = {f.name for f in dataclasses.fields(config_type) if f.metadata.get("flat")}
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict) and key.replace("-", "_") in blocks:
            out.update(value)
        else:
            out[key] = value
    return out


class MissingOption(Exception):
    """A required field that no key gave (its name is the argument)."""


def instantiate(config_type: type, tree: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(config_type)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(config_type):
        if field.metadata.get("nested"):
            if field.name in tree:
                kwargs[field.name] = instantiate(hints[field.name], tree[field.name])
            elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                kwargs[field.name] = instantiate(hints[field.name], {})
        elif field.name in tree:
            kwargs[field.name] = tree[field.name]
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise MissingOption(field.name)
    return config_type(**kwargs)


def typed_value(value: Any, annotation: Any) -> Any:
    """``value`` as TOML gives it, checked against the field's annotation (lists become the comma-separated
    text the flags take, or tuples where the field holds one)."""
    kinds = value_kinds(annotation)
    if isinstance(value, dict):
        if dict in kinds:
            return value
        raise ValueError("expected a single value, got a table")
    if isinstance(value, list):
        if tuple in kinds:
            return tuple(value)
        if str in kinds and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
            return ",".join(str(v) for v in value)
        raise ValueError(f"expected {describe_kinds(kinds)}, got a list")
    if isinstance(value, bool):
        if bool in kinds:
            return value
        raise ValueError(f"expected {describe_kinds(kinds)}, got {str(value).lower()}")
    if isinstance(value, int) and (int in kinds or float in kinds):
        return value if int in kinds else float(value)
    if isinstance(value, float) and float in kinds:
        return value
    if isinstance(value, str) and (str in kinds or tuple in kinds):
        return value
    raise ValueError(f"expected {describe_kinds(kinds)}, got {value!r}")
