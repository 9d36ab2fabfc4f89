"""A config's keys as a user sets them: its own init fields and, through each nested block, the keys the config
reads of it (walked here, apart from the code that builds flags and docs, so the tests check that code)."""

from __future__ import annotations

import dataclasses
import typing


def leaf_keys(config_type: type, only: tuple[str, ...] | None = None) -> list[str]:
    hints = typing.get_type_hints(config_type)
    out = []
    for field in dataclasses.fields(config_type):
        if only is not None and field.name not in only:
            continue
        if field.metadata.get("nested"):
            out += leaf_keys(hints[field.name], field.metadata.get("keys"))
        elif field.init:
            out.append(field.name)
    return out
