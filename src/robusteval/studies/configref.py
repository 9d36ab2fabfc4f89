"""The config reference (docs/config-reference.md), generated from the config classes: every option of every
method's config, with its type, default, flag and help, and MATCHA's presets. A setting that ``--help`` leaves out
(a ``--config`` key, a ``--help-all`` flag) is documented here; a test checks that the file is up to date.

Regenerate: ``python -m robusteval.studies.configref docs/config-reference.md``.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robusteval.config import CONFIG_KEY, MORE, flag_of, reference_cell, reference_value

#: The configs of the commands that belong to no method (a method's other commands are its ``MethodSpec.configs``):
#: (command, "module:ClassName").
OTHER_CONFIGS = (("perturb", "robusteval.perturbations.pipeline:PerturbConfig"),)

HEADER = """# Config reference

Generated from the config classes by `python -m robusteval.studies.configref docs/config-reference.md`
(`tests/studies/test_config_reference.py` fails when it is out of date): do not edit by hand.

Every key below can be set in a `--config` TOML file (`key = value`, the flag's name with `_` or `-`) and, for
a study's methods, as `methods.<method>.<key>` in the study file. Keys of a nested config (the data, the thinking
format) are flat: `dataset = "gsm8k"`, not a table. The shared blocks, declared once for every method
(`GenerationOptions` as `generation`, `JudgeOptions` as `judging`, `PromptOptions` as `prompt`; each method lists
the keys it reads, with its defaults), are flat too, or a table named after the block (`[generation]`;
`[methods.<method>.generation]` in a study file); a sweep's `--grid` names their keys flat or as
`generation.<key>`. The flag column says how the command line takes it:

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


def _default(field: dataclasses.Field[Any], defaults: dict[str, Any]) -> str:
    if field.name in defaults:
        return reference_value(defaults[field.name])
    if field.default is not dataclasses.MISSING:
        return reference_value(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return "see its keys"
    return "required"


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


def _rows(config_type: type, part: str = "", command_line: bool = True, block: dict[str, Any] | None = None
          ) -> Iterator[str]:
    """The rows of ``config_type``'s keys; ``block``: the metadata of a shared block's field (its keys read, its
    config's defaults)."""
    hints = typing.get_type_hints(config_type)
    keys, defaults = (block or {}).get("keys"), (block or {}).get("defaults") or {}
    for field in dataclasses.fields(config_type):
        if not field.init or (keys is not None and field.name not in keys):
            continue
        if field.metadata.get("nested"):
            inner = hints[field.name]
            yield from _rows(inner, inner.__name__, command_line and bool(field.metadata.get("cli", True)),
                             dict(field.metadata))
            continue
        yield (f"| `{field.name}` | {reference_cell(_type_name(hints[field.name]))} | "
               f"{reference_cell(_default(field, defaults))} | "
               f"{_flag(field, command_line)} | {reference_cell(part)} | {reference_cell(field.metadata.get('help', ''))} |")


def config_section(title: str, config_type: type) -> str:
    """One config's section: its keys in declaration order, nested configs' keys inline."""
    doc = reference_cell((config_type.__doc__ or "").strip().split("\n\n")[0])
    lines = [f"## {title}", "", f"`{config_type.__module__}.{config_type.__name__}`: {doc}", "",
             "| key | type | default | flag | part of | help |", "|---|---|---|---|---|---|", *_rows(config_type)]
    return "\n".join(lines) + "\n"


def sections() -> list[tuple[str, type]]:
    """(title, config class) of every method of a study and every other command with a config."""
    from robusteval.studies.methods import get_method, method_names

    out = []
    for name in method_names():
        method = get_method(name)
        if method is not None:
            out.append((f"method `{name}`", method.config_type))
    from robusteval.methods import load_reference, methods

    others = [*(pair for spec in methods() for pair in spec.configs), *OTHER_CONFIGS]
    out += [(f"command `{command}`", load_reference(ref, f"config of {command}")) for command, ref in others]
    return out


def reference() -> str:
    """The whole reference, as docs/config-reference.md holds it."""
    from robusteval.methods import load_reference, methods

    more = [load_reference(spec.reference, f"method {spec.name} reference")() for spec in methods() if spec.reference]
    parts = [HEADER, *more, *(config_section(title, config) for title, config in sections())]
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
