"""The method registry: every registered method is its own package, and no module outside it names it.

"Names it" is read from the code, not its prose: an import of a module of the method's package, or a string
literal that is exactly the method's name or its runs' command ("wordimportance", "attack wordimportance").
Docstrings and comments may talk about any method. The only other places that may name one:

* the public API (``robusteval/__init__.py``), which re-exports every method's entry function by module name;
* the command modules of the method's package (``MethodSpec.cli`` of its specs);
* the guides (``tour``, ``cli/quickstart`` that runs it, ``doctor``): a guided walk through named methods, written
  as a user's script would be, through each method's public functions;
* ``perturb labels --run`` (``cli/perturb.py``), which attaches a review's labels to a perturbed-benchmark run.

A few literals spell a method's name while meaning something else (:data:`NOT_NAMINGS`).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from robusteval.errors import UserError
from robusteval.methods import (
    METHODS,
    MethodSpec,
    load_reference,
    method_of_command,
    methods,
    register_method,
    registration_modules,
)

SOURCE = Path(__file__).resolve().parents[1] / "src" / "robusteval"
#: The public API re-exports every method's functions by module name (a lookup table, not a use); the guides walk
#: a newcomer through named methods as a user's script does.
ALLOWED = frozenset({"robusteval", "robusteval.tour", "robusteval.cli.quickstart", "robusteval.doctor"})
#: (module, method) pairs allowed besides: the module's use of that method is its own feature.
USES = frozenset({("robusteval.cli.perturb", "robustness")})
#: (module, literal) pairs that spell a method's name but mean something else.
NOT_NAMINGS = frozenset({
    ("robusteval.variants.expr", "eval"),  # ast.parse(mode="eval"): Python's expression mode
    ("robusteval.variants.varmath_csv", "eval"),  # the same
    ("robusteval.cli.variants", "eval"),  # `robusteval variants eval`: a word of VAR-MATH's own command
    ("robusteval.metrics.varmath_diagnosis", "variants"),  # the diagnosis "cannot solve the variants"
})


def module_files() -> dict[str, Path]:
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a module's, a class's, a function's)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def namings(path: Path, spec: MethodSpec, shown: str, module: str = "") -> list[str]:
    """Where ``module`` names ``spec``'s method: imports into its package, its name or command as a literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    package = spec.package
    out = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        if any(t == package or t.startswith(package + ".") for t in targets):
            out.append(f"{shown}:{node.lineno}: imports {package}")
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                and node.value in (spec.name, spec.command) and (module, node.value) not in NOT_NAMINGS):
            out.append(f"{shown}:{node.lineno}: the literal {node.value!r}")
    return out


def test_every_registration_file_registers_a_method_of_its_own_package() -> None:
    found = registration_modules()
    specs = methods()
    for module in found:
        assert any(spec.package == module.rpartition(".")[0] for spec in specs), f"{module} registered nothing"
    for spec in specs:
        assert f"{spec.package}.registration" in found, f"{spec.name}: registered outside a registration.py"
        assert method_of_command(spec.command) == spec


@pytest.mark.parametrize("spec", methods(), ids=lambda spec: spec.name)
def test_no_module_outside_a_method_names_it(spec: MethodSpec) -> None:
    allowed = {*ALLOWED, *(other.cli for other in methods() if other.package == spec.package and other.cli)}
    found = [line for module, path in module_files().items()
             if not (module == spec.package or module.startswith(spec.package + ".")) and module not in allowed
             and (module, spec.name) not in USES
             for line in namings(path, spec, str(path.relative_to(SOURCE.parent)), module)]
    assert not found, f"{len(found)} places outside {spec.package} name {spec.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("spec", methods(), ids=lambda spec: spec.name)
def test_a_methods_references_resolve(spec: MethodSpec) -> None:
    if spec.results:
        assert callable(spec.load_results().rates)
    if spec.runner:
        method = spec.load_runner()
        assert method.name == spec.name
    if spec.cli:
        module = importlib.import_module(spec.cli)
        assert module.COMMAND and module.HELP and callable(module.register)


def test_the_naming_rule_sees_imports_and_literals_not_prose(tmp_path: Path) -> None:
    spec = MethodSpec("demo", "attack demo", "", "demo", package="robusteval.attacks.demo")
    source = tmp_path / "m.py"
    source.write_text('"""About the demo method: "demo" here is prose."""\n'
                      "from robusteval.attacks.demo.results import RESULTS\nimport robusteval.attacks.demo\n"
                      "KIND = 'attack demo'\nOTHER = 'demo2'\n# 'demo' in a comment\n")
    assert sorted(namings(source, spec, "m.py")) == [f"m.py:2: imports {spec.package}",
                                                     f"m.py:3: imports {spec.package}", "m.py:4: the literal 'attack demo'"]


def test_a_spec_is_checked_and_a_command_belongs_to_one_method() -> None:
    with pytest.raises(ValueError, match="direction"):
        MethodSpec("x", "x", "", "x", headlines=(("acc", "up"),))
    with METHODS.scoped():
        spec = register_method(MethodSpec("x-one", "x run", "", "x"))
        assert spec.package == (__name__.rpartition(".")[0] or __name__)  # the registering module's package
        with pytest.raises(ValueError, match="already method x-one"):
            register_method(MethodSpec("x-two", "x run", "", "x"))
        assert method_of_command("x run") is not None
    assert method_of_command("x run") is None  # forgotten after the scope


def test_a_bad_reference_is_one_line() -> None:
    with pytest.raises(UserError, match="not a 'module:attribute'"):
        load_reference("robusteval.methods", "what")
    with pytest.raises(UserError, match="has no attribute 'nope'"):
        load_reference("robusteval.methods:nope", "what")
