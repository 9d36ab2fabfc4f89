"""The method registry: every kind of run robusteval makes (an eval, an attack, a benchmark), one entry each.

A method is its own package plus one registration: a ``registration.py`` in the package that calls
:func:`register_method` with a :class:`MethodSpec`. The built-ins are found by that file name (nothing lists
them); an installed package adds one through the ``robusteval.methods`` entry-point group (the entry point names
its registration module). A spec holds data and ``"module:attribute"`` references, resolved only when used, so
reading the registry (``robusteval --help``, a study plan being checked) imports no pipeline and no torch.

What the rest of robusteval reads from a spec:

* ``runner``: a zero-argument function returning the method's :class:`~robusteval.studies.methods.Method`
  (config class, data kind, identity, pipeline): what ``robusteval study`` runs in a cell;
* ``results``: a :class:`~robusteval.report.method_results.MethodResults` (its numbers with their denominators,
  per-example outcomes for the paired tests, its leaderboards, report section and paper tables): what ``runs
  show``, ``runs compare`` (terminal, CSV, LaTeX), the report, ``results_frame`` and the study leaderboard show;
* ``stages``: the modules that register its run-store stages (:mod:`robusteval.store.stages`);
* ``cli``: the module of its command (``COMMAND``, ``HELP``, ``register(subparsers)``);
* ``headlines``: the study leaderboard's numbers, each with the direction that is more robust.

A method's ``results`` module shows runs, so it sits in the results layer even inside a pipeline package
(``tests/test_import_layers.py``: a module named ``results``, or one under a ``results`` package, is in the results
layer); nothing below it imports it.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.registry import Registry

#: The entry-point group through which an installed package adds a method.
ENTRY_POINTS = "robusteval.methods"
#: The file name that makes a package's method registration found.
REGISTRATION = "registration"
#: Directions a headline may have.
DIRECTIONS = ("higher", "lower")


@dataclass(frozen=True)
class StudyTable:
    """A top-level table of the study file that a method reads (word-importance's ``[ors]``): the options its
    ``study_columns`` get (``MethodResults.study_columns``), checked when the study file is read."""

    #: The table's name (``ors`` for ``[ors]``); also the folder under the study's ``out`` its results go to.
    name: str
    #: The keys it may hold (any other is refused, naming the file, line and key).
    keys: tuple[str, ...]
    #: ``"module:function"``: ``check(options)`` raises a :class:`~robusteval.config.ConfigError` naming the key
    #: of a bad value (None: only the keys are checked).
    check: str | None = None


@dataclass(frozen=True)
class MethodSpec:
    """One method: what its runs record, and where the rest of robusteval finds its parts."""

    #: The study file's ``methods.<name>``, the leaderboard's prefix.
    name: str
    #: The command its runs record in their identity (``attack matcha``, ``variants eval``): how a stored run is
    #: told to be this method's.
    command: str
    summary: str
    #: The id of the report section that shows its runs (a study's leaderboard links each cell there).
    section: str
    #: ``"module:function"``: a zero-argument function returning the study's ``Method`` (None: not a study method).
    runner: str | None = None
    #: ``"module:attribute"``: the method's ``MethodResults`` (None: its runs show only their accuracy, if any).
    results: str | None = None
    #: The module of its command line (None: no command of its own, or one an attack group builds).
    cli: str | None = None
    #: Modules that register its run-store stages.
    stages: tuple[str, ...] = ()
    #: (metric, direction that is more robust) of the study leaderboard; empty: every number its runs give.
    headlines: tuple[tuple[str, str], ...] = ()
    #: Position among the methods (the report's section order, lists); ties by name.
    order: int = 100
    #: The package the method is (``register_method`` fills it in from the registering module): nothing outside
    #: it names the method (``tests/test_method_registry.py``).
    package: str = ""
    #: The study file's top-level table its ``study_columns`` read (None: it reads none).
    study_table: StudyTable | None = None
    #: The configs of its other commands, for docs/config-reference.md: (command, ``"module:Class"``).
    configs: tuple[tuple[str, str], ...] = ()
    #: ``"module:function"``: more of the config reference (markdown; MATCHA's presets), None: none.
    reference: str | None = None
    #: Stages whose units depend only on the model, the data and the prompt: a sweep reuses them across points.
    shared_stages: tuple[str, ...] = ()
    #: The fields of its runs' summaries that are its rates, in the order a table shows them: what a sweep of it
    #: averages over seeds (``robusteval sweep``); empty: its headlines' metrics.
    summary_rates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for metric, direction in self.headlines:
            if direction not in DIRECTIONS:
                raise ValueError(f"method {self.name}: headline {metric} direction {direction!r}: "
                                 f"give one of {', '.join(DIRECTIONS)}")

    @property
    def sweep_metrics(self) -> tuple[str, ...]:
        """The summary fields a sweep of it averages over seeds: its ``summary_rates``, else its headlines'."""
        return self.summary_rates or tuple(metric for metric, _ in self.headlines)

    def load_results(self) -> Any:
        return load_reference(self.results, f"method {self.name} results") if self.results else None

    def load_runner(self) -> Any:
        return load_reference(self.runner, f"method {self.name} runner")() if self.runner else None


def load_reference(reference: str, what: str) -> Any:
    """The object ``"package.module:attribute"`` names (imported, never evaluated)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise UserError(f"{what}: {reference!r} is not a 'module:attribute' reference")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UserError(f"{what}: module {module_name} has no attribute {attribute!r}") from None


def registration_modules() -> list[str]:
    """Every ``registration`` module of the installed robusteval, found by file name (no list to keep)."""
    root = Path(__file__).resolve().parent
    return sorted(".".join(("robusteval", *path.relative_to(root).with_suffix("").parts))
                  for path in root.rglob(f"{REGISTRATION}.py"))


METHODS: Registry[MethodSpec] = Registry("method", modules=registration_modules, entry_points=ENTRY_POINTS)


def register_method(spec: MethodSpec, *, replace: bool = False) -> MethodSpec:
    """Add ``spec`` (its ``name`` must be new, its ``command`` too: a stored run belongs to one method)."""
    if not spec.package:
        caller = sys._getframe(1).f_globals.get("__name__", "")  # the registering module: its package is the method's
        spec = dataclasses.replace(spec, package=caller.rpartition(".")[0] or caller)
    for entry in METHODS.entries():  # while the registry loads, the ones registered so far
        if entry.value.command == spec.command and entry.name != spec.name and not replace:
            raise ValueError(f"method {spec.name}: command {spec.command!r} is already method {entry.name}'s")
    return METHODS.register(spec.name, summary=spec.summary, replace=replace)(spec)


def methods() -> list[MethodSpec]:
    """Every registered method, in their ``order``."""
    return sorted((entry.value for entry in METHODS.entries()), key=lambda spec: (spec.order, spec.name))


def method_named(name: str) -> MethodSpec | None:
    entry = METHODS.find(name)
    return entry.value if entry is not None else None


def method_of_command(command: object) -> MethodSpec | None:
    """The method whose runs record ``command`` (None: no registered method's)."""
    return next((spec for spec in methods() if spec.command == command), None)


def results_of_command(command: object) -> Any:
    """The ``MethodResults`` of the method whose runs record ``command`` (None: none, or it has none)."""
    spec = method_of_command(command)
    return spec.load_results() if spec is not None else None
