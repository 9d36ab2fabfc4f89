"""Readable YAML output for templates: multi-line questions as ``|`` blocks, keys in the order given."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Block style only where it round-trips (PyYAML falls back to quoting for trailing spaces, tabs, ...).
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    # Flow style for leaf collections: `VAR_X: {range: [10, 20, 2]}` reads better than one item per line.
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None
    )
