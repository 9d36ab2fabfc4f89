"""A study's leaderboard: one row per model, one column per (method table, dataset, headline metric).

Every number is the one ``runs show`` and ``rv.results_frame`` give for the cell's run
(:func:`robusteval.report.rates.run_rates`: value as the summary stores it, n and what n counts, 95% interval),
so the leaderboard never disagrees with the per-run summaries. A method may add columns computed over every
model's cell of one (method table, dataset) together (``MethodResults.study_columns``: word-importance's ORS,
one β for all of them), written under ``<out>/<its study table, else the method table>/<table>-<dataset>``
(``<out>/ors/<table>-<dataset>/ors.json``). A column whose cells are not comparable (their comparability keys
differ: :mod:`robusteval.report.comparability`, which holds MATCHA's counting) says so. A flagged number (a
MATCHA rate whose reasoning judge is deterministic only, or whose edits no semantic gate checked) is marked
``⚑`` in the printed rows, its flags in the column's note, in ``leaderboard.json`` (each cell's ``flags``) and
in the CSV (``<column>_flags``). A headline's rate over another of its method's denominators
(``MethodResults.denominators``: MATCHA under the authors' counting, ``ur[ours]``) gets a column beside it
(``...:ur@ours``), with the same direction. Where some model has examples in one of a method's categories beside
its headlines (``MethodResults.category_shares``: MATCHA's unjudged answers, clean reasonings judged wrong) their
share gets a column too, so each model's categories add up to its n (and its cells carry the flag saying so).
Accuracies read "higher is better" (a clean accuracy is not a robustness score), a method's own numbers as it
says (``MethodResults.readings``), the other numbers "<direction> is more robust".

Every pair of models is tested on each column (:mod:`robusteval.report.pairing`: McNemar or a paired bootstrap on
the examples both runs hold, Holm-adjusted over the whole table): ``leaderboard.json``'s ``pairwise``,
``pairwise.csv`` (one row per pair and column) and, in ``leaderboard.csv``, ``<column>_differs_from`` (the models
this one differs from, with the Holm-adjusted p).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError
from robusteval.methods import MethodSpec, method_named
from robusteval.methods import methods as registered_methods
from robusteval.metrics.flags import FLAG
from robusteval.metrics.formatting import clean_number
from robusteval.metrics.significance import PairedTest
from robusteval.report.build import section_of
from robusteval.report.model import Num, Rate
from robusteval.report.pairing import Comparison, holm_table, p_text, pairwise, pairwise_csv
from robusteval.report.tables import format_num
from robusteval.store import write_text_atomic
from robusteval.studies.plan import StudyPlan, run_dir

if TYPE_CHECKING:
    from robusteval.report.method_results import MethodResults

CSV_NAME = "leaderboard.csv"
JSON_NAME = "leaderboard.json"
PAIRWISE_NAME = "pairwise.csv"
#: Numbers that are accuracies: "higher is better", never "more robust" (a clean accuracy measures no robustness);
#: a method's own read as its results say (``MethodResults.readings``).
ACCURACIES = ("acc",)


def method_reading(metric: str) -> str | None:
    """How a registered method says its number ``metric`` reads (``MethodResults.readings``, by the whole name,
    then by the name before ``[``; ``{better}``: the column's direction); None where none says."""
    for spec in registered_methods():
        results = spec.load_results()
        readings = results.readings if results is not None else {}
        for key in (metric, metric.split("[", 1)[0]):
            if key in readings:
                return str(readings[key])
    return None


def direction(metric: str, better: str) -> str:
    """How a column reads: a method's own number as the method says (``MethodResults.readings``: a share of
    MATCHA's attacked examples in a category as such), else ``higher is better`` for an accuracy, else ``lower is
    more robust`` (or higher)."""
    reading = method_reading(metric)
    if reading is not None:
        return reading.format(better=better)
    if metric.split("[", 1)[0] in ACCURACIES:
        return f"{better} is better"
    return f"{better} is more robust"


@dataclass(frozen=True)
class Column:
    name: str  # "<method table>:<dataset>:<metric>"
    method: str
    dataset: str
    metric: str
    better: str  # "higher" or "lower"
    denominator: str = ""
    comparability: str = ""  # the cells' comparability key hash ("" when they differ or are unknown)
    note: str = ""

    @property
    def reads(self) -> str:
        return direction(self.metric, self.better)

    @property
    def label(self) -> str:
        """``eval · math · acc`` (not the column's name: rich reads ":name:" as an emoji code, "eval:m:acc" would
        print "evalⓂacc")."""
        return _label(self.method, self.dataset, self.name)


def _label(method: str, dataset: str, name: str) -> str:
    return f"{method} · {dataset} · {name.rsplit(':', 1)[1]}"


@dataclass
class StudyLeaderboard:
    models: list[str]
    columns: list[Column]
    cells: dict[tuple[str, str], Num] = field(default_factory=dict)  # (model, column) -> number
    runs: dict[tuple[str, str], str] = field(default_factory=dict)  # (model, column) -> run directory
    #: (model, column) -> what the cell's n counts, where it differs from the column's (MATCHA under the authors'
    #: counting beside runs under ours: "n_attacked (authors')" and "n_attacked")
    denominators: dict[tuple[str, str], str] = field(default_factory=dict)
    failed: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the results a method's study columns wrote (ORS's), for the study's report
    result_dirs: list[Path] = field(default_factory=list)
    #: every pair of models tested on each column, Holm-adjusted over the whole table
    comparisons: list[Comparison] = field(default_factory=list)
    #: column -> the id of the report section that shows its runs (the study report links each cell there)
    sections: dict[str, str] = field(default_factory=dict)

    def differs_from(self, model: str, column: str) -> str:
        """The models ``model`` differs from on ``column`` (Holm-adjusted p < 0.05), ``"b (p_holm=0.0123)"``."""
        found = []
        for c in self.comparisons:
            if c.column == column and c.test.significant and model in (c.model_a, c.model_b):
                other = c.model_b if model == c.model_a else c.model_a
                found.append(f"{other} (p_holm={p_text(c.test.p_holm)})")
        return "; ".join(found)

    def records(self) -> list[dict[str, Any]]:
        """One flat record per model (the CSV): each column's value, ``_n``, ``_ci_low``, ``_ci_high`` (numbers
        without float noise: :func:`~robusteval.metrics.formatting.clean_number`; leaderboard.json keeps them as
        the runs' summaries hold them) and ``_flags`` (the number's flags, "; "-separated; "" for none)."""
        out = []
        for model in self.models:
            record: dict[str, Any] = {"model": model}
            for column in self.columns:
                num = self.cells.get((model, column.name), Num(None))
                low, high = num.ci if num.ci is not None and None not in num.ci else (None, None)
                record.update({column.name: clean_number(num.value), f"{column.name}_n": num.n,
                               f"{column.name}_ci_low": clean_number(low), f"{column.name}_ci_high": clean_number(high),
                               f"{column.name}_flags": "; ".join(num.flags)})
                record[f"{column.name}_differs_from"] = self.differs_from(model, column.name)
            out.append(record)
        return out

    def denominator(self, model: str, column: Column) -> str:
        return self.denominators.get((model, column.name), column.denominator)

    def to_dict(self) -> dict[str, Any]:
        cells = []
        for model in self.models:
            for column in self.columns:
                num = self.cells.get((model, column.name))
                if num is None:
                    continue
                ci = list(num.ci) if num.ci is not None and None not in num.ci else None
                cells.append({"model": model, "column": column.name, "value": num.value, "n": num.n,
                              "denominator": self.denominator(model, column) or None, "ci95": ci,
                              "flags": list(num.flags),
                              "run": self.runs.get((model, column.name))})
        return {"models": self.models, "columns": [{**vars(c), "reads": c.reads} for c in self.columns],
                "cells": cells, "pairwise": [c.to_dict() for c in self.comparisons], "failed": self.failed,
                "notes": self.notes}

    def rows(self) -> tuple[list[dict[str, str]], list[str]]:
        """Printable: one row per column (metric), one column per model, each ``value [interval] n=N``."""
        rows = []
        for column in self.columns:
            row = {"metric": f"{column.label} ({column.reads})"}
            for model in self.models:
                num = self.cells.get((model, column.name))
                row[model] = "-" if num is None else _text(num, self.denominator(model, column))
            rows.append(row)
        return rows, ["metric", *self.models]


def _text(num: Num, denominator: str) -> str:
    shown = format_num(num, unit=True)
    if num.value is not None and denominator:
        shown += f" {denominator}={'?' if num.n is None else num.n}"
    return shown


def _headline_rate(rates: Sequence[Rate], metric: str, own: MethodResults | None) -> Rate | None:
    """The rate ``metric`` names, or the one the method says it stands for (``MethodResults.headline_rate``:
    word-importance's ``asr[max]``, its success rate at the largest α)."""
    picked = own.headline_rate(rates, metric) if own is not None and own.headline_rate is not None else None
    return picked if picked is not None else next((rate for rate in rates if rate.metric == metric), None)


def _with_denominators(headlines: Sequence[tuple[str, str]], rates: Iterable[Sequence[Rate]],
                       own: MethodResults | None = None) -> list[tuple[str, str]]:
    """The headlines, each followed by its rates over the method's other denominators some run has
    (``own.denominators``: MATCHA under the authors' counting, ``ur`` then ``ur[ours]``), in the headline's
    direction; after them, the method's category shares (``own.category_shares``: MATCHA's unjudged...) where
    some run has an example in one, so each model's categories sum to its n."""
    rates = [list(run) for run in rates]
    names = {rate.metric for run in rates for rate in run}
    held = {rate.metric for run in rates for rate in run if rate.num.value}
    others = tuple(own.denominators) if own is not None else ()
    shares = tuple(own.category_shares) if own is not None else ()
    headlines = [*headlines, *((m, "lower") for m in shares
                               if m in held or any(f"{m}[{d}]" in held for d in others))]
    return [(name, better) for metric, better in headlines
            for name in (metric, *(f"{metric}[{d}]" for d in others if f"{metric}[{d}]" in names))]


def build_leaderboard(plan: StudyPlan, root: Path, results: Sequence[Any]) -> StudyLeaderboard:
    """The leaderboard of the finished cells of ``plan`` under ``root``; writes ``leaderboard.csv`` and
    ``leaderboard.json`` there."""
    from robusteval.report.comparability import comparability_key, key_hash, why_apart
    from robusteval.report.rates import run_rates
    from robusteval.runs import load_run

    finished = {r.cell for r in results if r.status in ("done", "skipped")}
    board = StudyLeaderboard([m.name for m in plan.models], [],
                             failed=[{"cell": r.cell, "error": r.error, "log": r.log, "run_dir": r.run_dir}
                                     for r in results if r.status == "failed"])
    pairs = list(dict.fromkeys((c.method_name, c.dataset) for c in plan.cells))
    for method_name, dataset in pairs:
        cells = [c for c in plan.cells if (c.method_name, c.dataset) == (method_name, dataset)]
        method = cells[0].method
        runs = {c.model.name: load_run(run_dir(root, c)) for c in cells if c.id in finished}
        keys = {model: comparability_key(run) for model, run in runs.items()}
        hashes = {key_hash(k) for k in keys.values()}
        note = ""
        if len(hashes) > 1:
            first, *others = keys.values()
            note = why_apart(first, others)
        headlines = method.headlines or tuple((r.metric, "higher") for r in
                                              (run_rates(next(iter(runs.values()))) if runs else []))
        rates = {model: run_rates(run) for model, run in runs.items()}
        spec = method_named(method.name)
        own = spec.load_results() if spec is not None else None
        # Numbers about the method's inputs beside its headlines (its ``study_extras``): shown, never tested.
        extras = own.study_extras if own is not None else None
        measured = extras(list(rates.values())) if extras is not None else []
        for metric, better in [*_with_denominators(headlines, rates.values(), own), *measured]:
            # "acc[original]" -> "acc@original": brackets are markup to the terminal table and noise in a CSV
            name = f"{method_name}:{dataset}:{metric.replace('[', '@').rstrip(']')}"
            denominator = ""
            flagged: dict[str, list[str]] = {}  # flag text -> the models whose number carries it
            tested = []  # (model, run, the run's name for the number, its value): the pairs tested below
            for model, run in runs.items():
                rate = _headline_rate(rates[model], metric, own)
                if rate is not None:
                    board.cells[(model, name)] = rate.num
                    board.runs[(model, name)] = str(run.path)
                    board.denominators[(model, name)] = denominator = rate.denominator
                    if (metric, better) not in measured:  # a set's labels are no model's score: not tested
                        tested.append((model, run, rate.metric, rate.num.value))
                    for flag in rate.num.flags:
                        flagged.setdefault(flag, []).append(model)
            board.sections[name] = section_of(next(iter(runs.values())).command) if runs else ""
            board.comparisons += pairwise(name, metric, better, tested,
                                          percent=all(board.cells[(m, name)].percent for m, *_ in tested),
                                          label=_label(method_name, dataset, name))
            legend = "; ".join(f"{FLAG} {', '.join(models)}: {flag}" for flag, models in flagged.items())
            board.columns.append(Column(name, method_name, dataset, metric, better, denominator,
                                        next(iter(hashes)) if len(hashes) == 1 else "",
                                        "; ".join(part for part in (note, legend) if part)))
        if spec is not None and own is not None and own.study_columns is not None and runs:
            _add_columns(board, plan, root, method_name, dataset, runs, spec, own.study_columns)
    board.comparisons = holm_table(board.comparisons)
    _write(board, root)
    return board


def _add_columns(board: StudyLeaderboard, plan: StudyPlan, root: Path, method_name: str, dataset: str,
                 runs: dict[str, Any], spec: MethodSpec, study_columns: Any) -> None:
    """The columns a method computes over all of a (method, dataset)'s cells at once (its ``study_columns``, given
    the study file's table the method reads), written under ``root/<that table, else the method
    table>/<method table>-<dataset>``; one that cannot be computed is a note, not a failure."""
    table = spec.study_table.name if spec.study_table is not None else None
    target = root / (table or method_name) / f"{method_name}-{dataset}"
    try:
        columns = study_columns(runs, target, dict(plan.tables.get(table or "", {})))
    except UserError as exc:
        # named as its column would be when the method adds one column (ORS: "<table>:<dataset>:ors")
        named = f"{method_name}:{dataset}" + (f":{table}" if table else "")
        board.notes.append(f"{named}: not computed: {exc}")
        return
    for source in dict.fromkeys(Path(column.source) for column in columns):
        board.result_dirs.append(source)
    for column in columns:
        name = f"{method_name}:{dataset}:{column.metric}"
        models = [model for model in board.models if model in column.cells]
        for model in models:
            board.cells[(model, name)] = column.cells[model]
            board.runs[(model, name)] = column.source
        board.comparisons += [
            Comparison(name, column.metric, column.better, a, b, column.source, column.source,
                       PairedTest("not tested", note=column.untested), percent=column.cells[a].percent,
                       label=_label(method_name, dataset, name))
            for i, a in enumerate(models) for b in models[i + 1:]]
        board.sections[name] = spec.section
        board.columns.append(Column(name, method_name, dataset, column.metric, column.better, "", note=column.note))


def _write(board: StudyLeaderboard, root: Path) -> None:
    records = board.records()
    buffer = io.StringIO()
    columns = list(records[0]) if records else ["model"]
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    write_text_atomic(root / CSV_NAME, buffer.getvalue())
    write_text_atomic(root / PAIRWISE_NAME, pairwise_csv(board.comparisons))
    write_text_atomic(root / JSON_NAME, json.dumps(board.to_dict(), indent=2, ensure_ascii=False, default=str)
                      + "\n")

