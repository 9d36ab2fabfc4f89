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
import re
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


# ------------------------------------------------------------------------------- one method's summary fields

#: A literal that reads like a field of a summary or a column (``n_unjudged``, ``clean_cot_wrong_rate``).
FIELD = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
#: The layers that show every method's runs: none of them may spell a field that only one method's results read.
SURFACES = ("robusteval.report", "robusteval.studies", "robusteval.store", "robusteval.cli", "robusteval.runs",
            "robusteval.lifecycle", "robusteval.methods")
#: Layers below the methods that several methods share: a field one of them writes (a judge's ``false_equations``,
#: a perturbed set's ``measured_preservation``) belongs to that layer, not to the one method that reads it.
SHARED = ("robusteval.judges", "robusteval.perturbations", "robusteval.models", "robusteval.data",
          "robusteval.store", "robusteval.executors")
#: (module, field) pairs of a surface that still spell one method's field, each with why.
FIELD_EXCEPTIONS = {
    ("robusteval.cli.runs", "left_out"): "an entry of ``runs show`` that ``MethodResults.show`` may give (the "
                                         "contract's word, MATCHA's the one method that gives it now)",
    ("robusteval.report.build", "instances_sha256"): "an identity's hash of its input file, read by every "
                                                       "method's cell link (VAR-MATH's instances file is one)",
    ("robusteval.report.comparability", "instances_sha256"): "the identity's hashed input files (every method's)",
    ("robusteval.report.collect", "source_dataset"): "a run's dataset, read from every summary that names it "
                                                     "(a transfer names its source run's)",
    ("robusteval.studies.sweep", "n_seeds"): "the sweep's own field (it writes it; MATCHA's section reads a sweep "
                                             "table)",
    ("robusteval.report.collect", "n_seeds"): "the sweep table's own field, which the check of a sweep.json tells "
                                              "from the swept method's numbers",
}


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def string_literals(path: Path) -> list[tuple[str, int]]:
    """Every string literal of the module at ``path`` that is no docstring, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [(node.value, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


def own_fields(files: dict[str, Path], packages: list[str]) -> dict[str, str]:
    """field -> the one method package whose results read it: a field-like literal of its ``results`` modules that
    no other method's package and no shared layer spells."""
    literals = {module: {value for value, _ in string_literals(path)} for module, path in files.items()}
    found: dict[str, str] = {}
    for package in packages:
        for module, values in literals.items():
            if _inside(module, package) and ".results" in module[len(package):] + ".":
                found.update((value, package) for value in values if FIELD.match(value))
    for module, values in literals.items():
        spellers = [p for p in packages if _inside(module, p)] or (["shared"] if module.startswith(SHARED) else [])
        for value in values & found.keys():
            if spellers and found[value] not in spellers:
                found[value] = ""  # another method or a shared layer spells it too: no one method's
    return {value: package for value, package in found.items() if package}


def field_spellings(files: dict[str, Path], fields: dict[str, str], exempt: set[str]) -> list[str]:
    """Where a surface module (not a method's, not ``exempt``) spells one method's field."""
    return [f"{path.relative_to(SOURCE.parent)}:{line}: {value!r} (only {fields[value]} reads it)"
            for module, path in files.items()
            if module.startswith(SURFACES) and module not in exempt and not any(_inside(module, p) for p in fields.values())
            for value, line in string_literals(path)
            if value in fields and (module, value) not in FIELD_EXCEPTIONS]


def test_no_surface_spells_a_field_only_one_method_reads() -> None:
    specs = methods()
    files = module_files()
    fields = own_fields(files, sorted({spec.package for spec in specs}))
    assert {"clean_cot_wrong_rate", "n_unjudged"} <= fields.keys()  # the rule sees MATCHA's own fields
    exempt = {*ALLOWED, *(spec.cli for spec in specs if spec.cli)}
    found = field_spellings(files, fields, exempt)
    assert not found, (f"{len(found)} places in the shared layers spell one method's field (give the method a hook "
                       "in its MethodResults instead):\n" + "\n".join(found))
    stale = [pair for pair in FIELD_EXCEPTIONS if pair[0] not in files or pair[1] not in fields]
    assert not stale, f"exceptions no longer needed: {stale}"


def test_the_field_rule_sees_one_methods_fields_in_the_shared_layers(tmp_path: Path) -> None:
    source = tmp_path / "robusteval"
    for name, text in {"demo/results/rows.py": "KEYS = ('n_demo_only', 'n_shared', 'rate')\n",
                       "other/results/rows.py": "KEYS = ('n_shared',)\n",
                       "judges/x.py": "KEY = 'judge_field'\n",
                       "demo/results/more.py": "KEY = 'judge_field'\n",
                       "report/table.py": '"""n_demo_only in a docstring is prose."""\n'
                                          "COLUMNS = ('n_shared', 'judge_field', 'rate')\nX = 'n_demo_only'\n"}.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    files = {".".join(("robusteval", *path.relative_to(source).with_suffix("").parts)): path
             for path in sorted(source.rglob("*.py"))}
    fields = own_fields(files, ["robusteval.demo", "robusteval.other"])
    assert fields == {"n_demo_only": "robusteval.demo"}
    table = files["robusteval.report.table"]
    assert [value for value, _ in string_literals(table) if value in fields] == ["n_demo_only"]


# ------------------------------------------------------------------------------- one method's metric names

#: (module, metric) pairs of a surface that spell a metric name only one method declares, each with why.
METRIC_EXCEPTIONS: dict[tuple[str, str], str] = {}


def declared_metrics(specs: list[MethodSpec]) -> dict[str, str]:
    """metric -> the one method package that declares it: its headlines' names (``asr[max]``, the name before
    ``[`` and that name with its bracket: ``asr``, ``asr[``) and its summary's rates (``summary_rates``), where no
    other method's package declares it."""
    packages: dict[str, set[str]] = {}
    for spec in specs:
        names = {metric for metric, _ in spec.headlines} | set(spec.summary_rates)
        bases = {name.split("[", 1)[0] for name in names if "[" in name}
        for name in names | bases | {f"{base}[" for base in bases}:
            packages.setdefault(name, set()).add(spec.package)
    return {name: next(iter(owners)) for name, owners in packages.items() if len(owners) == 1}


def metric_spellings(files: dict[str, Path], metrics: dict[str, str], exempt: set[str],
                     root: Path = SOURCE.parent) -> list[str]:
    """Where a surface module (not a method's, not ``exempt``) spells a metric only one method declares."""
    return [f"{path.relative_to(root)}:{line}: {value!r} (only {metrics[value]} declares it)"
            for module, path in files.items()
            if module.startswith(SURFACES) and module not in exempt and not any(_inside(module, p) for p in metrics.values())
            for value, line in string_literals(path)
            if value in metrics and (module, value) not in METRIC_EXCEPTIONS]


def test_no_surface_spells_a_metric_only_one_method_declares() -> None:
    specs = methods()
    metrics = declared_metrics(specs)
    assert {"ur", "sr", "wr", "asr[max]", "asr", "asr["} <= metrics.keys()  # MATCHA's and word-importance's
    assert "acc" not in metrics  # every answer-scoring method's
    exempt = {*ALLOWED, *(spec.cli for spec in specs if spec.cli)}
    found = metric_spellings(module_files(), metrics, exempt)
    assert not found, (f"{len(found)} places in the shared layers spell one method's metric (declare it in the "
                       "method's registration or results and read the registry instead):\n" + "\n".join(found))
    stale = [pair for pair in METRIC_EXCEPTIONS if pair[1] not in metrics]
    assert not stale, f"exceptions no longer needed: {stale}"


def test_the_metric_rule_sees_one_methods_metric_in_a_surface(tmp_path: Path) -> None:
    specs = [MethodSpec("a", "a", "", "a", package="robusteval.a", headlines=(("hit[max]", "lower"), ("acc", "higher"))),
             MethodSpec("b", "b", "", "b", package="robusteval.b", summary_rates=("acc", "miss"))]
    metrics = declared_metrics(specs)
    assert metrics == {"hit[max]": "robusteval.a", "hit": "robusteval.a", "hit[": "robusteval.a",
                       "miss": "robusteval.b"}
    (tmp_path / "report").mkdir()
    (tmp_path / "a").mkdir()
    surface = tmp_path / "report" / "board.py"
    surface.write_text('"""hit[max] in prose."""\nX = ("acc", "hit[max]")\nY = "miss"\n')
    own = tmp_path / "a" / "board.py"
    own.write_text('X = "hit[max]"\n')
    found = metric_spellings({"robusteval.report.board": surface, "robusteval.a.board": own}, metrics, set(),
                             tmp_path)
    assert sorted(line.split(": ", 1)[1] for line in found) == ["'hit[max]' (only robusteval.a declares it)",
                                                         "'miss' (only robusteval.b declares it)"]


def method_metrics_imports(files: dict[str, Path], names: set[str], exempt: set[str]) -> list[str]:
    """Where a surface module (not ``exempt``) imports a metrics module of one method (``metrics.<name>`` or
    ``metrics.<name>_...``: MATCHA's counting in ``metrics.matcha_summary``)."""
    found = []
    for module, path in files.items():
        if not module.startswith(SURFACES) or module in exempt:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for target in targets:
                leaf = target.removeprefix("robusteval.metrics.")
                if leaf != target and any(leaf == name or leaf.startswith(name + "_") for name in names):
                    found.append(f"{path.relative_to(SOURCE.parent)}:{node.lineno}: imports {target}")
    return found


def test_no_surface_imports_one_methods_metrics() -> None:
    specs = methods()
    exempt = {*ALLOWED, *(spec.cli for spec in specs if spec.cli)}
    found = method_metrics_imports(module_files(), {spec.name for spec in specs}, exempt)
    assert not found, (f"{len(found)} shared modules import one method's metrics (a shared mark such as FLAG "
                       "belongs in a shared module: metrics.flags):\n" + "\n".join(found))


def test_matchas_registered_summary_rates_are_its_metrics_rates() -> None:
    """The registration spells MATCHA's rates out to stay light to import (no numpy): they are the metrics'."""
    from robusteval.methods import methods
    from robusteval.metrics.matcha import MATCHA_RATES

    (matcha,) = [spec for spec in methods() if spec.name == "matcha"]
    assert matcha.summary_rates == MATCHA_RATES
