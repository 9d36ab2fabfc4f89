"""Studies: many models x methods x datasets from one TOML file, one resumable run per cell, one leaderboard.

``robusteval study STUDY.toml`` and ``rv.study("study.toml")``. The file is read and every cell's config built
and checked first (:mod:`robusteval.studies.plan`); then every cell's run identity is made (models described,
not loaded) and checked against what its directory holds, so a study file changed in a way that changes a
cell's results is refused, in one line, before any model loads. Then each model is loaded once and its cells run
one after the other, each an ordinary run directory ``<out>/<model>/<method>/<dataset>`` opened through the run
lifecycle and computed by the same pipeline function its command calls (in process or on the Ray workers of
the executor in force). A cell that fails is recorded with its one-line error and the others go on.

The study directory holds ``study.json`` (every cell's state), ``study.log`` (progress), ``leaderboard.csv`` /
``leaderboard.json`` (:mod:`robusteval.studies.leaderboard`), ``ors/<dataset>/ors.json`` and ``report.html``.
Re-running the study resumes it: finished cells (same identity and options) are skipped without loading their
model, an interrupted cell continues from its stored units.
"""

from __future__ import annotations

import gc
import json
import os
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError, environment_error
from robusteval.progress import log_to_file, status
from robusteval.store import SUMMARY_NAME, RunLock, RunStore, write_text_atomic
from robusteval.studies.plan import Cell, StudyPlan, load_study, run_dir

if TYPE_CHECKING:
    from robusteval.executors import Executor
    from robusteval.studies.leaderboard import StudyLeaderboard

STATE_NAME = "study.json"
LOG_NAME = "study.log"
REPORT_NAME = "report.html"


@dataclass
class CellResult:
    cell: str  # "<model>/<method>/<dataset>"
    run_dir: str
    status: str  # "done" (computed now), "skipped" (finished earlier), "failed"
    error: str = ""
    log: str = ""  # where the failure's traceback is

    def to_dict(self) -> dict[str, Any]:
        return {"cell": self.cell, "run_dir": self.run_dir, "status": self.status, "error": self.error,
                "log": self.log}


@dataclass
class StudyResult:
    out: Path
    cells: list[CellResult]
    leaderboard: StudyLeaderboard
    report: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[CellResult]:
        return [c for c in self.cells if c.status == "failed"]


def study(source: str | os.PathLike[str] | Mapping[str, Any], out: str | os.PathLike[str] | None = None, *,
          executor: Executor | str | None = None, report: bool = True) -> StudyResult:
    """Run the study ``source`` (a TOML file, or its content as a dict) into ``out`` (default: the file's
    ``out``, else a folder named after the file); returns every cell's state, the leaderboard and the report.

    ``executor``: ``"inprocess"``, ``"ray"`` or an :class:`~robusteval.executors.Executor` (default: the one in
    force, see :func:`robusteval.use_executor`). A cell that fails does not stop the others: see
    :attr:`StudyResult.failed`. A UserError, before any model loads, for a bad study file or a cell whose
    directory holds a different run."""
    plan = load_study(source)
    root = Path(out) if out is not None else plan.out
    with _executor(executor):
        return _run(plan, root, report=report)


@contextmanager
def _executor(executor: Executor | str | None) -> Iterator[None]:
    from robusteval.executors import make_executor, use_executor

    if executor is None:
        yield
    elif isinstance(executor, str):
        with use_executor(make_executor(executor), close=True):
            yield
    else:
        with use_executor(executor):
            yield


def _run(plan: StudyPlan, root: Path, *, report: bool) -> StudyResult:
    from robusteval.studies.leaderboard import build_leaderboard

    if root.exists() and not root.is_dir():
        raise UserError(f"study directory {root}: is a file")
    identities = _identities(plan, root)  # refuses a changed cell before anything is written or loaded
    root.mkdir(parents=True, exist_ok=True)
    lock = RunLock.acquire(root)  # one study process per directory (each cell also locks its own)
    try:
        with log_to_file(root / LOG_NAME):
            results = _run_cells(plan, root, identities)
            board = build_leaderboard(plan, root, results)
            page = None
            finished = [Path(r.run_dir) for r in results if r.status != "failed"]
            if report and finished:  # this study's cells only (not those of cells the file no longer has)
                from robusteval.report.build import build_report
                from robusteval.studies.page import leaderboard_section

                # The study's model names everywhere on the page, and its leaderboard first.
                names = {str(run_dir(root, cell)): cell.model.name for cell in plan.cells}
                try:
                    page = build_report([*finished, *board.result_dirs], root / REPORT_NAME, title=plan.title,
                                        names=names, lead=[leaderboard_section(board)])
                except UserError as exc:  # e.g. only eval cells: the report has no section for them
                    board.notes.append(f"report.html not written: {exc}")
            failed = [r for r in results if r.status == "failed"]
            status(f"study: {len(results) - len(failed)}/{len(results)} cells finished"
                   + (f", {len(failed)} failed: {', '.join(r.cell for r in failed)}" if failed else ""))
            return StudyResult(root, results, board, page, board.notes)
    finally:
        lock.release()


def _identities(plan: StudyPlan, root: Path) -> dict[str, dict[str, Any]]:
    """Every cell's run identity (models described where they will run, not loaded), each checked against what
    its directory already holds."""
    from robusteval.models.identity import describe_model

    described: dict[str, dict[str, Any]] = {}
    identities: dict[str, dict[str, Any]] = {}
    examples: dict[int, list[Any]] = {}
    for cell in plan.cells:
        if cell.model.name not in described:
            try:
                described[cell.model.name] = describe_model(cell.model.spec, **cell.model.options)
            except UserError as exc:
                raise UserError(f"{plan.path}: model {cell.model.name}: {exc}") from None
        if id(cell.config) not in examples:  # every model's cell of a (method, dataset) shares its config
            examples[id(cell.config)] = cell.method.examples(cell.config)
        data = examples[id(cell.config)]
        identity = cell.method.identity(cell.config, described[cell.model.name], data)
        folder = run_dir(root, cell)
        try:
            RunStore.stored_identity(folder)
        except UserError as exc:  # the store itself (foreign, damaged), not the study file, is at fault
            raise UserError(f"cell {cell.id}: its run store cannot be used: {exc}") from None
        try:
            RunStore.check_resumable(folder, identity)
        except UserError as exc:
            raise UserError(f"{plan.path}: cell {cell.id}: the study file changed what this cell computes: "
                            f"{exc}") from None
        identities[cell.id] = identity
    return identities


def _read_state(root: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((root / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {c["cell"]: c for c in data.get("cells", []) if isinstance(c, dict) and "cell" in c}


def _write_state(root: Path, plan: StudyPlan, state: dict[str, dict[str, Any]]) -> None:
    data = {"study": plan.path, "title": plan.title, "models": [m.name for m in plan.models],
            "cells": [state[c.id] for c in plan.cells if c.id in state]}
    write_text_atomic(root / STATE_NAME, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _run_cells(plan: StudyPlan, root: Path, identities: dict[str, dict[str, Any]]) -> list[CellResult]:
    stored = _read_state(root)
    state: dict[str, dict[str, Any]] = {}
    results: dict[str, CellResult] = {}
    total = len(plan.cells)
    number = {cell.id: i for i, cell in enumerate(plan.cells, 1)}
    status(f"study {plan.path}: {len(plan.models)} models x {total // max(1, len(plan.models))} method-dataset "
           f"pairs = {total} cells -> {root}")
    for model in plan.models:
        cells = [c for c in plan.cells if c.model.name == model.name]
        pending = []
        for cell in cells:
            key = cell.key(identities[cell.id])
            before = stored.get(cell.id, {})
            if before.get("status") == "done" and before.get("key") == key and \
                    (run_dir(root, cell) / SUMMARY_NAME).is_file():
                status(f"study [{number[cell.id]}/{total}] {cell.id}: finished earlier, not recomputed")
                results[cell.id] = CellResult(cell.id, str(run_dir(root, cell)), "skipped")
                state[cell.id] = {**before, "cell": cell.id}
            else:
                pending.append((cell, key))
        if not pending:
            continue
        status(f"study: loading {model.name} ({model.spec}) for {len(pending)} cells")
        try:
            backend = _load(model.spec, model.options)
        except Exception as exc:  # every cell of this model fails with this line; the others go on
            for cell, key in pending:
                results[cell.id] = _failure(root, cell, exc, "loading the model")
                state[cell.id] = {"cell": cell.id, "status": "failed", "key": key,
                                  "error": results[cell.id].error, "run_dir": str(run_dir(root, cell))}
            _write_state(root, plan, {**stored, **state})
            continue
        shared: dict[str, Any] = {model.spec: backend}
        for cell, key in pending:
            status(f"study [{number[cell.id]}/{total}] {cell.id}: running -> {run_dir(root, cell)}")
            results[cell.id] = _run_cell(plan, root, cell, identities[cell.id], backend,
                                         _loader(shared, model.options))
            outcome = results[cell.id]
            state[cell.id] = {"cell": cell.id, "status": "done" if outcome.status == "done" else "failed",
                              "key": key, "error": outcome.error, "run_dir": outcome.run_dir}
            status(f"study [{number[cell.id]}/{total}] {cell.id}: "
                   + (f"failed: {outcome.error}" if outcome.error else "done"))
            _write_state(root, plan, {**stored, **state})
        del backend, shared
        gc.collect()  # release the weights before the next model loads
    _write_state(root, plan, state)
    return [results[c.id] for c in plan.cells]


def _load(spec: str, options: dict[str, Any]) -> Any:
    from robusteval.models import load_backend

    return load_backend(spec, **options)


def _loader(shared: dict[str, Any], options: dict[str, Any]) -> Callable[[str], Any]:
    """Judges and translators a cell names: loaded with the model's options, once; the cell's model reused."""

    def load(spec: str) -> Any:
        if spec not in shared:
            shared[spec] = _load(spec, options)
        return shared[spec]

    return load


def _run_cell(plan: StudyPlan, root: Path, cell: Cell, identity: dict[str, Any], backend: Any,
              load_model: Callable[[str], Any]) -> CellResult:
    from robusteval.lifecycle import open_run

    path = run_dir(root, cell)
    info = {**cell.method.info(cell.config, plan.batch_size), "study": str(root), "cell": cell.id}
    try:
        with open_run(path, identity, info=info) as (store, _):
            cell.method.run(cell.config, backend, store, load_model, plan.batch_size)
    except Exception as exc:  # a failed cell is reported and the study goes on
        return _failure(root, cell, exc, "running")
    return CellResult(cell.id, str(path), "done")


def _failure(root: Path, cell: Cell, exc: BaseException, doing: str) -> CellResult:
    """The cell's one-line error; the traceback goes to ``<out>/errors/<model>.<method>.<dataset>.log``."""
    known = environment_error(exc)
    line = " ".join(str(known if known is not None else f"{type(exc).__name__}: {exc}").split())
    log = root / "errors" / f"{cell.id.replace('/', '.')}.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"cell {cell.id} failed while {doing}\n\n" + "".join(traceback.format_exception(exc)),
                       encoding="utf-8")
    except OSError:
        return CellResult(cell.id, str(run_dir(root, cell)), "failed", f"{doing}: {line}")
    return CellResult(cell.id, str(run_dir(root, cell)), "failed", f"{doing}: {line}", str(log))
