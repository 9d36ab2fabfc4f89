"""Helpers shared by the variants tests (imported by name: tests/variants is on sys.path under pytest)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers.shared import shared_file

# Runs the CLI in a subprocess (the variants command is the registered VAR-MATH method's).
CLI_BOOTSTRAP = "import sys, robusteval.cli.main as m\nsys.exit(m.main(sys.argv[1:]))\n"


def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    import robusteval.cli.main as cli

    return cli.main(argv)


def cli_command(*args: str) -> list[str]:
    """argv for a subprocess running the CLI."""
    return [sys.executable, "-c", CLI_BOOTSTRAP, *args]


def var_math(kind: str, name: str) -> Path:
    """A published VAR-MATH file, ``kind`` "templates" or "instances"; skips (or fails under
    ROBUSTEVAL_REQUIRE_DATA=1) when the shared data is absent."""
    return shared_file(f"var-math/{kind}/{name}")


def var_template(name: str) -> Path:
    """``templates/VAR-Math_<name>.csv``."""
    return var_math("templates", f"VAR-Math_{name}.csv")


def var_published(name: str) -> Path:
    """``instances/VAR_<name>_test.jsonl``."""
    return var_math("instances", f"VAR_{name}_test.jsonl")
