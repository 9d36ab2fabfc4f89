"""Every command's --help shows a default only where it says something (issue 28 polish): never "(default: None)",
never a default after an on/off flag ("--no-random-start ... (default: True)"), never two defaults for one flag."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from robusteval.cli.configflags import full_help
from robusteval.cli.main import build_parser


def _parsers(
    parser: argparse.ArgumentParser, name: str = "robusteval"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def _helps() -> list[tuple[str, str]]:
    """Each command's full help (``--help-all``: the options its ``--help`` leaves out included)."""
    return [(name, " ".join(full_help(parser).split())) for name, parser in _parsers(build_parser())]


HELPS = dict(_helps())


def test_every_command_is_reached() -> None:
    names = set(HELPS)
    assert {"robusteval attack matcha", "robusteval variants instantiate", "robusteval runs show"} <= names


@pytest.mark.parametrize("name", sorted(HELPS))
def test_help_prints_no_empty_or_wrong_default(name: str) -> None:
    text = HELPS[name]
    assert "(default: None)" not in text
    assert "(default: False)" not in text and "(default: True)" not in text  # on/off flags say what they do
    # One flag's help (up to the next flag) holds at most one default.
    for entry in re.split(r" (?=--?[a-z])", text):
        assert entry.count("(default") <= 1, f"{name}: {entry}"


def test_negation_flag_and_real_defaults_are_kept() -> None:
    helps = HELPS
    matcha = helps["robusteval attack matcha"]
    start = matcha.index("--no-random-start ")
    assert "(default" not in matcha[start : matcha.index(" --", start + 3)]
    assert "--n N instances per template (default: 5)" in helps["robusteval variants instantiate"]
    assert "(default: 0; with --compat var-math 42" in helps["robusteval variants instantiate"]
