"""``--help`` builds its parser from declarations, not from the pipelines (issue 38, item 6): printing the help of
the top level, or of any command or nested subcommand, imports neither numpy nor torch nor any method's pipeline,
each in a fresh interpreter through the real entry point. The command tree is read from the parser, so a command
added later is checked without editing this file. The top level lists every command by name and help line; a
named command gets its full options."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest

from robusteval.cli.main import build_parser, command_modules, command_paths
from robusteval.methods import methods

# Heavy third-party packages; none is needed to print a help.
HEAVY = ("numpy", "torch", "transformers", "rich", "sympy", "httpx", "scipy")
# Modules that run something (a method's pipeline, the run lifecycle, the judges, the perturbation and judge-audit
# pipelines); every registered method's stage modules and study runner are added below.
RUNNING = ("robusteval.lifecycle", "robusteval.runner", "robusteval.judges.base", "robusteval.judges.audit",
           "robusteval.perturbations.pipeline", "robusteval.attacks.matcha.pipeline",
           "robusteval.attacks.matcha.transfer", "robusteval.attacks.wordimportance.pipeline",
           "robusteval.attacks.wordimportance.ors")

_LAUNCHER = """\
import json, sys
from robusteval.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def pipelines() -> set[str]:
    """The modules that run a method: :data:`RUNNING` and every registered method's stages and study runner."""
    found = set(RUNNING)
    for spec in methods():
        found.update(spec.stages)
        if spec.runner:
            found.add(spec.runner.partition(":")[0])
    return found


@cache
def _help(*command: str) -> tuple[str, frozenset[str]]:
    """The help text of ``robusteval COMMAND --help`` and the modules its fresh interpreter loaded."""
    result = subprocess.run([sys.executable, "-c", _LAUNCHER, *command, "--help"], capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, result.stderr
    return result.stdout, frozenset(report["modules"])


def _heavy(modules: frozenset[str]) -> list[str]:
    """The heavy packages (by their top-level name) and running modules among ``modules``."""
    running = pipelines()
    return sorted({m.split(".")[0] if m.split(".")[0] in HEAVY else m for m in modules
                   if m.split(".")[0] in HEAVY or m in running})


# A fast representative set (one per kind of command: the top level, an attack, a method's command, a command with
# subcommands and one of them, a tool); every command and subcommand is checked by the slow sweep below.
REPRESENTATIVE = [(), ("attack", "matcha"), ("eval",), ("perturb",), ("perturb", "review"), ("runs", "compare")]


@pytest.mark.parametrize("command", REPRESENTATIVE, ids=lambda c: " ".join(c) or "top")
def test_help_imports_no_pipeline_numpy_or_torch(command: tuple[str, ...]) -> None:
    text, modules = _help(*command)
    assert f"usage: robusteval {' '.join(command)}".strip() in " ".join(text.split())
    assert not _heavy(modules), f"`robusteval {' '.join(command)} --help` imported {_heavy(modules)}"


@pytest.mark.slow
def test_every_command_and_subcommand_help_is_light() -> None:
    paths = command_paths()
    assert len(paths) > 25 and ("perturb", "labels") in paths and ("variants", "eval") in paths  # the walk is whole
    with ThreadPoolExecutor(max_workers=4) as pool:  # each a fresh interpreter: modules never accumulate
        helps = dict(zip(paths, pool.map(lambda path: _help(*path), paths), strict=True))
    heavy = {" ".join(path) or "(top level)": _heavy(modules) for path, (_, modules) in helps.items()}
    heavy = {path: loaded for path, loaded in heavy.items() if loaded}
    assert not heavy, "\n".join(f"robusteval {path} --help imported {', '.join(loaded)}"
                                 for path, loaded in heavy.items())
    for path, (text, _) in helps.items():
        assert f"usage: robusteval {' '.join(path)}".strip() in " ".join(text.split())


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
