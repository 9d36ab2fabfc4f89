"""Typed configs: frozen dataclasses whose fields carry their CLI flag, help text and choices.

A pipeline's config is the single description of a run: the CLI builds its flags from the fields
(``robusteval.cli.configflags``), a notebook builds the dataclass directly, and ``identity()`` turns it
into the run identity. ``option(...)`` is ``dataclasses.field`` with that metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any


def option(default: Any = dataclasses.MISSING, *, help: str = "", flag: str | None = None,
           choices: Sequence[Any] | None = None, metavar: str | None = None, cli: bool = True,
           negate: str | None = None, identity: bool = True) -> Any:
    """A config field. ``flag`` overrides ``--field-name``; ``negate`` makes a bool default-True field a
    ``--no-…`` switch; ``cli=False`` keeps it out of the command line; ``identity=False`` keeps it out of the
    run identity (settings that do not change results, such as a batch size)."""
    metadata = {"help": help, "flag": flag, "choices": tuple(choices) if choices else None, "metavar": metavar,
                "cli": cli, "negate": negate, "identity": identity}
    if isinstance(default, list | dict | set):
        raise TypeError("use a tuple or None for container defaults (configs are frozen)")
    return dataclasses.field(default=default, metadata=metadata)


def nested(*, flags: bool = True) -> Any:
    """A required field holding another config (a DataSpec, ...): declare it first. Its fields become flags of
    the same command (``flags=False``: the command adds them itself)."""
    return dataclasses.field(metadata={"cli": flags, "nested": True, "identity": True})


def identity_fields(config: Any) -> dict[str, Any]:
    """The config's fields that change results, as plain JSON-able values. Nested configs are flattened into
    the parent (a DataSpec contributes dataset, data_file, data_sha256, fields), as run identities always were."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        if not field.metadata.get("identity", True):
            continue
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(value.identity() if hasattr(value, "identity") else identity_fields(value))
            continue
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out
