"""The config reference (docs/config-reference.md), generated from the config classes: every option of every
method's config, with its type, default, flag and help, and MATCHA's presets. A setting that ``--help`` leaves out
(a ``--config`` key, a ``--help-all`` flag) is documented here; a test checks that the file is up to date.

Regenerate: ``python -m robusteval.studies.configref docs/config-reference.md``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robusteval.config import CONFIG_KEY, MORE, flag_of

#: The configs of the commands that are not methods of a study: (command, "module:ClassName").
OTHER_CONFIGS = (
    ("transfer", "robusteval.attacks.matcha.transfer:TransferConfig"),
    ("ors", "robusteval.evals.ors:OrsConfig"),
    ("prompt-robustness", "robusteval.evals.prompt_robustness.config:PromptRobustnessConfig"),
    ("prompt-robustness --mode search", "robusteval.evals.prompt_robustness.config:PromptSearchConfig"),
    ("prompt-robustness --mode spread", "robusteval.evals.prompt_robustness.config:PromptSpreadConfig"),
    ("perturb", "robusteval.perturbations.pipeline:PerturbConfig"),
)

HEADER = """# Config reference

Generated from the config classes by `python -m robusteval.studies.configref docs/config-reference.md`
(`tests/studies/test_config_reference.py` fails when it is out of date): do not edit by hand.

Every key below can be set in a `--config` TOML file (`key = value`, the flag's name with `_` or `-`) and, for
a study's methods, as `methods.<method>.<key>` in the study file. Keys of a nested config (the data, the thinking
format) are flat: `dataset = "gsm8k"`, not a table. The flag column says how the command line takes it:

* `--flag`: shown by `--help`;
* `--flag` (`--help-all`): accepted, shown by `--help-all` only (settings most runs leave alone);
* `--config` (`--flag` deprecated): a key of `--config` files, presets and study files; the flag still works for
  one release, prints one line naming this key, and is left out of `--help`;
* `-`: not a flag (given by the command itself).

A default `unset` means the method decides (its help says how), usually from the dataset or the preset.
"""


def _type_name(annotation: Any) -> str:
    """``int``, ``float or unset``, ``list of str``: a field's type as a user reads it."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        names = [_type_name(a) for a in typing.get_args(annotation) if a is not type(None)]
        optional = type(None) in typing.get_args(annotation)
        return " or ".join(names) + (" or unset" if optional else "")
    origin = typing.get_origin(annotation)
    if origin is tuple:
        inner = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return "list of " + (_type_name(inner[0]) if inner else "values")
    if origin is dict:
        return "table"
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(annotation))
    return getattr(annotation, "__name__", str(annotation))


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        return _value(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return "see its keys"
    return "required"


def _value(value: Any) -> str:
    """A value as a ``--config`` file writes it (TOML: ``true``, ``"gold"``, ``0.25``); None: unset."""
    return "unset" if value is None else f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"


def _flag(field: dataclasses.Field[Any], command_line: bool) -> str:
    tier = field.metadata.get("cli", True)
    if not command_line or not tier:
        return "-"
    flag = flag_of(field)
    if tier == CONFIG_KEY:
        return f"`--config` (`{flag}` deprecated)"
    if tier == MORE:
        return f"`{flag}` (`--help-all`)"
    return f"`{flag}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "-"


def _rows(config_type: type, part: str = "", command_line: bool = True) -> Iterator[str]:
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        if not field.init:
            continue
        if field.metadata.get("nested"):
            inner = hints[field.name]
            yield from _rows(inner, inner.__name__, command_line and bool(field.metadata.get("cli", True)))
            continue
        yield (f"| `{field.name}` | {_cell(_type_name(hints[field.name]))} | {_cell(_default(field))} | "
               f"{_flag(field, command_line)} | {_cell(part)} | {_cell(field.metadata.get('help', ''))} |")


def config_section(title: str, config_type: type) -> str:
    """One config's section: its keys in declaration order, nested configs' keys inline."""
    doc = _cell((config_type.__doc__ or "").strip().split("\n\n")[0])
    lines = [f"## {title}", "", f"`{config_type.__module__}.{config_type.__name__}`: {doc}", "",
             "| key | type | default | flag | part of | help |", "|---|---|---|---|---|---|", *_rows(config_type)]
    return "\n".join(lines) + "\n"


def presets_section() -> str:
    """MATCHA's presets: what each sets (per dataset and level on top)."""
    from robusteval.attacks.matcha.config_presets import PRESETS

    lines = ["## MATCHA presets (`--preset`, `preset = \"...\"`)", "",
             "A preset fills the settings a run leaves unset; a flag, a `--config` key or a study key wins. The run "
             "identity records the values, not the preset's name.", ""]
    for name, preset in PRESETS.items():
        lines += [f"### `{name}`", "", _cell(preset["help"]), "", "| key | value | where |", "|---|---|---|"]
        lines += [f"| `{key}` | {_value(value)} | every dataset |" for key, value in preset["values"].items()]
        for scope, tables in (("dataset", preset["datasets"]), ("level", preset["levels"])):
            for which, values in tables.items():
                lines += [f"| `{key}` | {_value(value)} | {scope} {which} |"
                          for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)


def sections() -> list[tuple[str, type]]:
    """(title, config class) of every method of a study and every other command with a config."""
    from robusteval.studies.methods import get_method, method_names

    out = []
    for name in method_names():
        method = get_method(name)
        if method is not None:
            out.append((f"method `{name}`", method.config_type))
    for command, ref in OTHER_CONFIGS:
        module, _, cls = ref.partition(":")
        out.append((f"command `{command}`", getattr(importlib.import_module(module), cls)))
    return out


def reference() -> str:
    """The whole reference, as docs/config-reference.md holds it."""
    parts = [HEADER, presets_section(), *(config_section(title, config) for title, config in sections())]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Write the reference to the file named (default: print it)."""
    args = sys.argv[1:] if argv is None else argv
    text = reference()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
