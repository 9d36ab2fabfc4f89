"""``--help`` builds its parser from declarations, not from the pipelines (issue 38, item 7): printing the help
imports neither numpy nor torch nor any method's pipeline, in a fresh interpreter through the real entry point.
The top level lists every command by name and help line; a named command gets its full options."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from robusteval.cli.main import build_parser, command_modules

# Heavy third-party packages and the modules that run a method; none is needed to print a help.
HEAVY = ("numpy", "torch", "transformers", "rich", "sympy", "httpx")
PIPELINES = ("robusteval.attacks.matcha.pipeline", "robusteval.attacks.matcha.transfer",
             "robusteval.attacks.wordimportance.pipeline", "robusteval.evals.answer_first.pipeline",
             "robusteval.evals.robustness.pipeline", "robusteval.perturbations.pipeline", "robusteval.lifecycle",
             "robusteval.judges.base")

_LAUNCHER = """\
import json, sys
from robusteval.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _help(*command: str) -> tuple[str, set[str]]:
    result = subprocess.run([sys.executable, "-c", _LAUNCHER, *command, "--help"], capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, result.stderr
    return result.stdout, set(report["modules"])


@pytest.mark.parametrize("command", [(), ("attack", "matcha")])
def test_help_imports_no_pipeline_numpy_or_torch(command: tuple[str, ...]) -> None:
    text, modules = _help(*command)
    assert "usage: robusteval" in text
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY or m in PIPELINES)
    assert not loaded, f"`robusteval {' '.join(command)} --help` imported {loaded}"


def test_top_level_help_lists_every_command_with_its_line() -> None:
    text, _ = _help()
    full = build_parser()  # every command complete: the declarations must say what register() builds
    subparsers = next(a for a in full._actions if a.dest == "command")
    listed = {c.dest: c.help for c in subparsers._choices_actions}
    assert len(listed) == len(command_modules())  # the listed ones and the registered methods'
    for name, line in listed.items():
        assert name in text and line
        assert " ".join(line.split()[:3]) in " ".join(text.split())


def test_a_named_command_gets_its_full_options() -> None:
    text, modules = _help("attack", "matcha")
    assert "--level" in text and "--judge" in text and "--out" in text
    assert "robusteval.attacks.matcha.config" in modules
