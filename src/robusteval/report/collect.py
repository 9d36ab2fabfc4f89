"""What a report is built from: run directories of any method, sweep directories and the results a method writes
that are not runs (ORS's ``ors.json``: ``MethodResults.result_files``).

Each path given is one of: a run directory (``results.sqlite``), a sweep directory (``sweep.json``, its runs
beneath it), a directory holding a method's result file (``ors.json``), or a directory with any of these below it
(the quick-start's output directory holds one run per part). Nothing is written; a path that is none of these is a one-line
:class:`~robusteval.errors.UserError`. ``names`` (run directory -> model name) gives runs the names a caller
knows them by (a study's model names), which :func:`model_name` then shows instead of the model's folder name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import DataError, UserError
from robusteval.report.model import Browser, Filter
from robusteval.runs import Run, load_run
from robusteval.store import DB_NAME

if TYPE_CHECKING:
    from robusteval.report.stored import ResultFile, StoredResult

SWEEP_NAME = "sweep.json"



@dataclass(frozen=True)
class NamedRun(Run):
    """A run shown under the name its caller gives its model (a study's ``[[models]] name``)."""

    name: str = ""


def _named(run: Run, names: Mapping[str, str]) -> Run:
    name = names.get(str(run.path.resolve()))
    return NamedRun(run.path, run.identity, run.info, run.summary, run.stages, name) if name else run


@dataclass(frozen=True)
class Sweep:
    path: Path
    data: dict[str, Any]  # sweep.json
    runs: list[Run]  # its member runs that could be found

    @property
    def attack(self) -> str:
        return str(self.data.get("attack"))


@dataclass(frozen=True)
class Inputs:
    runs: list[Run]  # run directories given (or found below a directory given), in order
    sweeps: list[Sweep]
    #: the results given that are not runs (a method's ``result_files``: ORS's), in order
    results: list[StoredResult] = field(default_factory=list)

    def stored(self, kind: str) -> list[StoredResult]:
        """The results of ``kind`` given that are not runs (ORS's: ``"ors"``)."""
        return [result for result in self.results if result.kind == kind]

    def of(self, command: str) -> list[Run]:
        return [run for run in self.runs if run.command == command]

    def finished(self, command: str) -> list[Run]:
        """Runs of ``command`` given directly that have a summary (what a section's tables show)."""
        return [run for run in self.of(command) if run.summary]

    def all_runs(self, command: str) -> list[Run]:
        """Runs of ``command`` given directly and inside sweeps (repeats and grids included)."""
        seen = {run.path.resolve() for run in self.of(command)}
        extra = [run for sweep in self.sweeps for run in sweep.runs
                 if run.command == command and run.path.resolve() not in seen]
        return [*self.of(command), *extra]


def _read_json(path: Path) -> dict[str, Any]:
    from robusteval.data.loaders.files import read_json

    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, "expected a JSON object")
    return data


def _kind(value: Any) -> str:
    from robusteval.data.loaders.fields import _type_name

    return _type_name(value)


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _expect(path: Path, value: Any, kind: type, field: str, *, optional: bool = False) -> Any:
    """``value`` when it is a ``kind`` (dict, list or str; ``None`` too when ``optional``), else a DataError
    naming ``field``."""
    if optional and value is None:
        return value
    if not isinstance(value, kind):
        names: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
        raise DataError(path, f"expected {names.get(kind, kind.__name__)}, got {_kind(value)}", field=field)
    return value


def _expect_number(path: Path, value: Any, field: str) -> None:
    if not _is_number(value):
        raise DataError(path, f"expected a number or null, got {_kind(value)}", field=field)


def _sweep_member(sweep_dir: Path, run_dir: str) -> Path:
    """A member run's directory: at its place below this sweep directory (members sit at
    ``<model>/<point>/seed-<s>``), so a moved or copied sweep reads its own runs; else as sweep.json names it."""
    named = Path(run_dir)
    below = sweep_dir.joinpath(*named.parts[-3:])
    return below if (below / DB_NAME).is_file() else named


#: The entries of a sweep table's row that are not numbers over seeds.
_SWEEP_ROW_FIELDS = frozenset({"model", "point", "n_seeds"})


def check_sweep(path: Path, data: dict[str, Any]) -> None:
    """The shape of a sweep.json the report reads (as ``studies.sweep.sweep`` writes it), or a DataError. A
    row's every entry beside its model, point and seed count is a number over seeds (the swept method's rates,
    the shares of its breakdown): ``{"mean": ..., "std": ...}``."""
    for key in ("table", "runs"):
        if key not in data:
            raise DataError(path, "missing field (not a sweep result?)", field=key)
    grid = _expect(path, data.get("grid"), dict, "grid", optional=True) or {}
    for name, values in grid.items():
        _expect(path, values, list, f"grid.{name}")
    for key in ("seeds", "models"):
        _expect(path, data.get(key), list, key, optional=True)
    for i, row in enumerate(_expect(path, data["table"], list, "table")):
        _expect(path, row, dict, f"table[{i}]")
        _expect(path, row.get("point"), dict, f"table[{i}].point", optional=True)
        for metric in [key for key in row if key not in _SWEEP_ROW_FIELDS]:
            stat = _expect(path, row.get(metric), dict, f"table[{i}].{metric}", optional=True) or {}
            for key in ("mean", "std"):
                _expect_number(path, stat.get(key), f"table[{i}].{metric}.{key}")
    for i, entry in enumerate(_expect(path, data["runs"], list, "runs")):
        _expect(path, entry, dict, f"runs[{i}]")
        _expect(path, entry.get("run_dir"), str, f"runs[{i}].run_dir")


def load_sweep(path: Path) -> Sweep:
    data = _read_json(path / SWEEP_NAME)
    check_sweep(path / SWEEP_NAME, data)
    members = []
    for entry in data["runs"]:
        member = _sweep_member(path, entry["run_dir"])
        if (member / DB_NAME).is_file():
            members.append(load_run(member))
    return Sweep(path, data, members)


def result_files() -> list[ResultFile]:
    """The result files of every registered method (``MethodResults.result_files``)."""
    from robusteval.methods import methods

    return [kind for spec in methods() if (results := spec.load_results()) is not None
            for kind in results.result_files]


def _markers(files: Sequence[ResultFile]) -> list[str]:
    """The file names that make a directory an input: a run's, a sweep's, then each result file's."""
    return [DB_NAME, SWEEP_NAME, *(kind.name for kind in files)]


def _found_below(root: Path, markers: Sequence[str]) -> list[Path]:
    """Run, sweep and result directories below ``root`` (holding one of ``markers``; not descending into the
    ones found), sorted."""
    found: list[Path] = []
    for current, dirs, files in os.walk(root):
        if any(name in files for name in markers):
            found.append(Path(current))
            dirs.clear()
        else:
            dirs.sort()
    return found


def collect(paths: Iterable[str | os.PathLike[str]], *, names: Mapping[str, str] | None = None) -> Inputs:
    """Load every run, sweep and method result (ORS's) named by ``paths`` (see the module docstring); ``names``:
    run directory -> the model name to show for it."""
    given_names = {str(Path(path).resolve()): name for path, name in (names or {}).items()}
    runs: list[Run] = []
    sweeps: list[Sweep] = []
    results: list[StoredResult] = []
    files = result_files()
    markers = _markers(files)
    seen: set[Path] = set()
    given = list(paths)
    if not given:
        raise UserError("report: give at least one run directory")
    for path in map(Path, given):
        if not path.is_dir():
            raise UserError(f"{path}: no such directory" if not path.exists() else f"{path}: not a directory")
        targets = [path] if _is_input(path, markers) else _found_below(path, markers)
        if not targets:
            raise UserError(f"{path}: not a run directory (no {', '.join(markers[:-1])} or {markers[-1]} in it or "
                            "below it)")
        for target in targets:
            if target.resolve() in seen:
                continue
            seen.add(target.resolve())
            if (target / SWEEP_NAME).is_file():
                sweeps.append(load_sweep(target))
            elif (kind := _result_file(target, files)) is not None:
                results.append(kind.load(target, given_names))
            else:
                runs.append(_named(load_run(target), given_names))
    return Inputs(runs, sweeps, results)


def _result_file(target: Path, files: Sequence[ResultFile]) -> ResultFile | None:
    """The kind of result ``target`` holds when it is not a run (a run directory is a run whatever it holds)."""
    if (target / DB_NAME).is_file():
        return None
    return next((kind for kind in files if (target / kind.name).is_file()), None)


def _is_input(path: Path, markers: Sequence[str]) -> bool:
    return any((path / name).is_file() for name in markers)


def nothing_to_show(inputs: Inputs, what: str) -> UserError:
    """The error when no finished run of a method the report knows is among ``inputs``: what was found."""
    found = sorted({str(run.command) for run in inputs.runs} | {f"sweep {s.attack}" for s in inputs.sweeps})
    unfinished = sum(1 for run in inputs.runs if run.summary is None)
    return UserError(f"{what}: no finished run of a method the report knows (answer-first eval, MATCHA, transfer, sweep, VAR-MATH "
                     "eval, robustness, word-importance, ORS); found: "
                     f"{', '.join(found) or 'nothing'}" + (f" ({unfinished} unfinished)" if unfinished else ""))


def runs_browser(browser_id: str, title: str, runs: Sequence[Run],
                 items_of: Callable[[Run, str], Iterable[dict[str, Any]]],
                 filters: Callable[[list[dict[str, Any]]], list[Filter]], **options: Any) -> Browser:
    """A section's example browser over ``runs``: each run's items (``items_of(run, its label)``), the filters
    made from all items, and a "Run" filter when there are several runs."""
    labels = [run_label(run, runs) for run in runs]
    items = [item for run, label in zip(runs, labels, strict=True) for item in items_of(run, label)]
    chosen = filters(items)
    if len(runs) > 1:
        chosen.append(Filter("run", "Run", labels))
    return Browser(browser_id, title, items, chosen, **options)


def run_label(run: Run, others: Sequence[Run] = ()) -> str:
    """A short name for a run: its model and dataset (the directory too when that is ambiguous)."""
    label = f"{model_name(run)} · {dataset_name(run)}"
    same = [o for o in others if o.path != run.path and f"{model_name(o)} · {dataset_name(o)}" == label]
    return f"{label} ({run.path.name})" if same else label


def model_name(run: Run) -> str:
    """The model's display name: the one its caller gave it (:class:`NamedRun`), else the summary's, else the
    identity's source."""
    if isinstance(run, NamedRun) and run.name:
        return run.name
    name = (run.summary or {}).get("model") or run.overview()["model"]
    return short_model(str(name or "?"))


#: Folder names that say nothing about the model: its parent folder is shown too.
GENERIC_NAMES = {"model", "models", "weights", "hf", "final", "merged", "output", "snapshot"}


def short_model(name: str) -> str:
    """``hf:/home/x/models/llama-3-8b`` -> ``llama-3-8b``: the last path part of a model spec (with its parent
    when that part is a generic ``model`` or ``checkpoint-500``)."""
    spec = name.split(":", 1)[1] if ":" in name and not name.startswith(("/", ".")) else name
    spec = spec.split("@", 1)[0]  # openai:MODEL@URL
    path = Path(spec.rstrip("/"))
    tail = path.name
    if (tail.lower() in GENERIC_NAMES or tail.lower().startswith("checkpoint")) and path.parent.name:
        tail = f"{path.parent.name}/{tail}"
    return tail or name


#: Dataset names that only say which file format was read: the file's name tells more.
GENERIC_FORMATS = {"jsonl", "json", "csv", "examples", "generic", "tsv"}


def dataset_name(run: Run) -> str:
    identity, summary = run.identity, run.summary or {}
    dataset = identity.get("dataset") or summary.get("dataset") or summary.get("source_dataset")
    data_file = identity.get("data_file") or summary.get("data_file") or identity.get("instances")
    if data_file and (not dataset or dataset in GENERIC_FORMATS):
        return Path(str(data_file)).stem
    return str(dataset or "?")
