"""Helpers shared by the variants tests (imported by name: tests/variants is on sys.path under pytest)."""

from __future__ import annotations

import sys

import pytest

from helpers.shared import SHARED_DATA

VAR_MATH = SHARED_DATA / "var-math"
TEMPLATES = VAR_MATH / "templates"
INSTANCES = VAR_MATH / "instances"

# Runs the CLI with the variants command registered, whether or not cli/main.py lists it yet.
CLI_BOOTSTRAP = (
    "import sys, robusteval.cli.main as m\n"
    "if 'robusteval.cli.variants' not in m.COMMAND_MODULES:\n"
    "    m.COMMAND_MODULES = (*m.COMMAND_MODULES, 'robusteval.cli.variants')\n"
    "sys.exit(m.main(sys.argv[1:]))\n"
)


def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    import robusteval.cli.main as cli

    if "robusteval.cli.variants" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "robusteval.cli.variants"))
    return cli.main(argv)


def cli_command(*args: str) -> list[str]:
    """argv for a subprocess running the CLI."""
    return [sys.executable, "-c", CLI_BOOTSTRAP, *args]


def need_var_math() -> None:
    if not (TEMPLATES / "VAR-Math_amc23.csv").is_file():
        pytest.skip("VAR-MATH data not available")
