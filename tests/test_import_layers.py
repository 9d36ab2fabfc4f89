"""The package imports downwards only: no import cycle, and no module imports one of a higher layer.

The import graph is built by parsing every module with ``ast`` (nothing is imported). An edge is any
``import``/``from ... import`` statement naming a robusteval module, wherever it sits: at the top, or inside a
function (a lazy import still makes the importer depend on the module; it only hides the cycle). Only imports
under ``if TYPE_CHECKING:`` are left out (they never run). Relative imports are resolved, and ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``. Names a registry imports from a list of
module strings (``Registry(modules=...)``, ``lazy=``) and ``__init__``'s lazy attribute map are plugin lookups,
not imports, and are not edges.

:data:`LAYERS` is the rule, lowest first; ``docs/architecture.md`` shows the same list (checked below).
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "robusteval"
ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / PACKAGE
DOC = ROOT / "docs" / "architecture.md"

#: Layers, lowest first: a module may import modules of its own layer or of a lower one. An entry is a top-level
#: module or package of robusteval (``__init__``: the package's own ``__init__.py``, the public API).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("_version", "errors", "extras", "config", "registry", "methods", "lazy", "paths", "seeding",
                    "environment", "peak", "progress", "workers")),
    ("primitives", ("store", "text", "metrics")),
    ("data", ("data",)),
    ("models", ("models",)),
    ("prompts", ("prompts",)),
    ("execution", ("executors", "runner", "lifecycle", "runs")),
    ("components", ("analysis", "perturbations", "judges", "judging")),
    ("pipelines", ("evals", "attacks", "variants")),
    ("results", ("report",)),
    ("studies", ("studies",)),
    ("guides", ("doctor", "tour")),
    ("interface", ("cli", "__init__", "__main__")),
)


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its ``__init__.py``)."""
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:  # the else branch does run
                yield from _import_nodes(ast.Module(body=[other], type_ignores=[]))
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        else:
            yield from _import_nodes(child)


def imports_of(name: str, path: Path, known: set[str]) -> dict[str, int]:
    """The robusteval modules ``name`` imports -> the line of the first such import."""
    is_package = path.name == "__init__.py"
    targets: dict[str, int] = {}
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in found:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                assert target in known, f"{path}:{node.lineno}: imports {target}, which is not a module"
                if target != name:
                    targets.setdefault(target, node.lineno)
    return targets


def import_graph() -> dict[str, dict[str, int]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at the end) per strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (the graph is deep enough for recursion limits)
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for name in graph:
        if name not in index:
            visit(name)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first search back to it)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in graph[node]:
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child in component and child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - a component always has one


def entry_of(module: str) -> str:
    """The :data:`LAYERS` entry a module falls under: its top-level module or package under robusteval."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


#: Modules of a method's package that sit in a higher layer than their package: a method's ``results`` module (or
#: package) shows its runs (``robusteval.methods``), so it is in the results layer, and its ``study_method`` module
#: builds its study method (``MethodSpec.runner``), so it is in the studies layer; nothing of its own package below
#: that layer may import them.
SUBLAYERS = {"results": "results", "study_method": "studies"}


def layer_of(module: str) -> int:
    for part in module.split(".")[2:]:
        if part in SUBLAYERS:
            return next(rank for rank, (name, _) in enumerate(LAYERS) if name == SUBLAYERS[part])
    for rank, (_, entries) in enumerate(LAYERS):
        if entry_of(module) in entries:
            return rank
    raise KeyError(entry_of(module))


def test_every_module_has_a_layer() -> None:
    entries = [entry for _, members in LAYERS for entry in members]
    assert len(entries) == len(set(entries)), "a module is listed in two layers"
    present = {entry_of(name) for name in modules()}
    missing = sorted(present - set(entries))
    assert not missing, f"modules in no layer of LAYERS (and docs/architecture.md): {missing}"
    stale = sorted(set(entries) - present)
    assert not stale, f"LAYERS lists modules that do not exist: {stale}"


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = cycles(graph)
    lines = [" -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle))
             + f" -> {cycle[-1]}" for cycle in found]
    assert not found, f"{len(found)} import cycles:\n" + "\n".join(lines)


def test_imports_go_downwards() -> None:
    upward = []
    for module, targets in import_graph().items():
        for target, line in targets.items():
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} (line {line}, layer {LAYERS[layer_of(module)][0]}) imports {target} "
                              f"(layer {LAYERS[layer_of(target)][0]})")
    assert not upward, f"{len(upward)} imports from a lower layer to a higher one:\n" + "\n".join(sorted(upward))


def doc_layers() -> list[tuple[str, tuple[str, ...]]]:
    """The numbered list under "## Layers" in docs/architecture.md: ``1. **name**: `module`, `package/`, ...``."""
    text = DOC.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    return [(match[1], tuple(entry.rstrip("/") for entry in re.findall(r"`([^`]+)`", match[2])))
            for match in re.finditer(r"^\d+\. \*\*([\w-]+)\*\*: (.*)$", text, re.MULTILINE)]


def test_doc_shows_the_layers() -> None:
    expected = "\n".join(f"{rank}. **{name}**: " + ", ".join(
        f"`{entry}/`" if (SOURCE / entry).is_dir() else f"`{entry}`" for entry in entries)
        for rank, (name, entries) in enumerate(LAYERS, 1))
    assert doc_layers() == list(LAYERS), f"docs/architecture.md's layer list should read:\n{expected}"


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
              "from . import errors\nfrom .store import sqlite\n"
              "if TYPE_CHECKING:\n    from robusteval.runner import run_units\n"
              "def f():\n    from robusteval.models import load_model\n    import robusteval.report.html\n")
    path = tmp_path / "runner.py"
    path.write_text(source)
    known = {"robusteval", "robusteval.errors", "robusteval.store", "robusteval.store.sqlite", "robusteval.models",
             "robusteval.runner", "robusteval.report", "robusteval.report.html"}
    assert set(imports_of("robusteval.runner", path, known)) == {
        "robusteval.errors", "robusteval.store.sqlite", "robusteval.models", "robusteval.report.html"}
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}}
    assert cycles(graph) == [["a", "b", "c", "a"]]


def test_executors_learn_the_cache_stages_from_the_modules_that_own_them() -> None:
    """Run time, in a fresh interpreter: the transport imports no judge or evaluation, and the stage registry
    imports its module list when read, so the stages a compute ships are complete in any process."""
    code = ("import json, sys\n"
            "import robusteval.executors.transport, robusteval.executors.ray, robusteval.models\n"
            "before = sorted(m for m in sys.modules if m.startswith(('robusteval.judges', 'robusteval.evals')))\n"
            "from robusteval.store.stages import cache_stages\n"
            "print(json.dumps([before, cache_stages()]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SOURCE.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == [[], ["classify", "classify_sample", "judge"]]
