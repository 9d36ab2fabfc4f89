"""Leaderboards: runs of one method side by side, ranked by the method's headline number.

``compare_runs(paths)`` is what ``robusteval runs compare`` prints (terminal table or CSV) and what the HTML
report's comparison section shows, so the two never disagree. Models are ranked among runs of the same task
(dataset, attack level, perturbation method...), most robust first:

* MATCHA: higher UR (answer and reasoning both survive) ranks first, then lower SR;
* transfer: lower transfer rate; VAR-MATH: higher strict score; perturbed benchmarks: lower RB-index;
* hard-label attacks: lower success rate at the largest α; ORS: higher score.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.report.collect import (
    MATCHA,
    ROBUSTNESS,
    TRANSFER,
    VARIANTS,
    WORDIMPORTANCE,
    Inputs,
    collect,
    dataset_name,
    model_name,
    nothing_to_show,
    short_model,
)
from robusteval.report.model import Note, Num, Section, Table
from robusteval.runs import Run


@dataclass(frozen=True)
class Leaderboard:
    method: str
    title: str
    columns: Sequence[str]  # "rank" first, then the task columns, the numbers, and "run"
    rows: Sequence[dict[str, Num | str]]

    @property
    def models(self) -> set[str]:
        return {str(row["model"]) for row in self.rows}

    def records(self) -> list[dict[str, Any]]:
        """Plain values (numbers as stored, not formatted) for the terminal table and CSV."""
        return [{"method": self.method, **{c: (row.get(c).value if isinstance(row.get(c), Num) else row.get(c))
                                           for c in self.columns}} for row in self.rows]


def _ranked(rows: list[dict[str, Num | str]], task: Sequence[str], key: Callable[[dict[str, Any]], Any]
            ) -> list[dict[str, Num | str]]:
    """Rows grouped by task, best first inside each group; ``rank`` counts within the group."""
    groups: dict[tuple[str, ...], list[dict[str, Num | str]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[c]) for c in task), []).append(row)
    out = []
    for task_key in sorted(groups):
        ordered = sorted(groups[task_key], key=key)
        out += [{"rank": str(i), **row} for i, row in enumerate(ordered, 1)]
    return out


def _value(row: dict[str, Any], name: str, *, descending: bool) -> tuple[bool, float]:
    """Sort key: missing values last, then by value in the direction asked."""
    num = row.get(name)
    value = num.value if isinstance(num, Num) else None
    if value is None:
        return True, 0.0
    return False, -value if descending else value


def _num(summary: dict[str, Any], key: str, run: Run, *, n: Any = None, ci: Any = None, percent: bool = True,
         digits: int = 1) -> Num:
    return Num(summary.get(key), n=n, ci=ci, runs=(str(run.path),), percent=percent, digits=digits)


def matcha_board(runs: Iterable[Run]) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for run in runs:
        s = run.summary or {}
        ci = s.get("ci95") or {}
        rows.append({"model": model_name(run), "dataset": dataset_name(run), "level": str(s.get("level")),
                     "variant": str(s.get("variant")), "n": str(s.get("n")),
                     "acc": _num(s, "acc", run, n=s.get("n"), ci=ci.get("acc")),
                     **{m: _num(s, m, run, n=s.get("n_rated"), ci=ci.get(m)) for m in ("ur", "sr", "wr")},
                     "run": str(run.path)})
    task = ("dataset", "level", "variant")
    ranked = _ranked(rows, task, lambda r: (_value(r, "ur", descending=True), _value(r, "sr", descending=False)))
    return Leaderboard("matcha", "MATCHA: higher UR (answer and reasoning survive) ranks first",
                       ["rank", "model", *task, "n", "acc", "ur", "sr", "wr", "run"], ranked)


def transfer_board(runs: Iterable[Run]) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for run in runs:
        s = run.summary or {}
        rows.append({"model": short_model(str(s.get("model") or model_name(run))),
                     "source": f"{short_model(str(s.get('source_model')))} · {s.get('source_dataset')}",
                     "n_transferred": str(s.get("n_transferred")),
                     "transfer_rate": _num(s, "transfer_rate", run, n=s.get("n_original_correct"),
                                           ci=s.get("transfer_rate_ci95")), "run": str(run.path)})
    ranked = _ranked(rows, ("source",), lambda r: _value(r, "transfer_rate", descending=False))
    return Leaderboard("transfer", "Transfer: lower transfer rate ranks first",
                       ["rank", "model", "source", "n_transferred", "transfer_rate", "run"], ranked)


def variants_board(runs: Iterable[Run]) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for run in runs:
        s = run.summary or {}
        rows.append({"model": model_name(run), "instances": Path(str(s.get("instances") or "?")).name,
                     "n_problems": str(s.get("n_problems")),
                     "strict": _num(s, "strict", run, n=s.get("n_problems"), ci=s.get("strict_ci95")),
                     "loose": _num(s, "loose", run, n=s.get("n_problems"), ci=s.get("loose_ci95")),
                     "run": str(run.path)})
    ranked = _ranked(rows, ("instances",), lambda r: (_value(r, "strict", descending=True),
                                                      _value(r, "loose", descending=True)))
    return Leaderboard("variants", "VAR-MATH: higher strict score ranks first",
                       ["rank", "model", "instances", "n_problems", "strict", "loose", "run"], ranked)


def robustness_board(runs: Iterable[Run]) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for run in runs:
        s = run.summary or {}
        rows.append({"model": model_name(run), "dataset": dataset_name(run), "sets": str(s.get("sets_spec")),
                     "acc_original": _num(s, "acc_original", run, n=s.get("n"), ci=s.get("acc_original_ci95")),
                     "rb_index": _num(s, "rb_index", run, n=s.get("n"), ci=s.get("rb_index_ci95")),
                     "run": str(run.path)})
    ranked = _ranked(rows, ("dataset", "sets"), lambda r: _value(r, "rb_index", descending=False))
    return Leaderboard("robustness", "Perturbed benchmarks: lower RB-index ranks first",
                       ["rank", "model", "dataset", "sets", "acc_original", "rb_index", "run"], ranked)


def wordimportance_board(runs: Iterable[Run]) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for run in runs:
        s = run.summary or {}
        by_rate = s.get("by_rate") or {}
        top = max(by_rate, key=float) if by_rate else None
        entry = by_rate.get(top) or {}
        rows.append({"model": model_name(run), "dataset": dataset_name(run), "method": str(s.get("method")),
                     "rate": str(top), "asr": _num(entry, "attack_success_rate", run,
                                                   n=(entry.get("n_success") or 0) + (entry.get("n_failed") or 0)),
                     "queries_per_success": _num(entry, "avg_queries_per_success", run, percent=False),
                     "run": str(run.path)})
    ranked = _ranked(rows, ("dataset", "method", "rate"), lambda r: _value(r, "asr", descending=False))
    return Leaderboard("wordimportance", "Hard-label attacks: lower success rate at the largest α ranks first",
                       ["rank", "model", "dataset", "method", "rate", "asr", "queries_per_success", "run"], ranked)


def ors_board(inputs: Inputs) -> Leaderboard:
    rows: list[dict[str, Num | str]] = []
    for result in inputs.ors:
        for model, score in (result.data.get("ors") or {}).items():
            rows.append({"model": short_model(model), "beta": str(result.data.get("beta")),
                         "ors": Num(score, runs=(str(result.path),), digits=2), "run": str(result.path)})
    ranked = _ranked(rows, ("run",), lambda r: _value(r, "ors", descending=True))
    return Leaderboard("ors", "ORS: higher score ranks first", ["rank", "model", "beta", "ors", "run"], ranked)


def leaderboards(inputs: Inputs) -> list[Leaderboard]:
    """Every method's leaderboard that has at least one run (direct runs only: sweeps have their own table)."""
    boards = [matcha_board(r for r in inputs.of(MATCHA) if r.summary),
              transfer_board(r for r in inputs.of(TRANSFER) if r.summary),
              variants_board(r for r in inputs.of(VARIANTS) if r.summary),
              robustness_board(r for r in inputs.of(ROBUSTNESS) if r.summary),
              wordimportance_board(r for r in inputs.of(WORDIMPORTANCE) if r.summary), ors_board(inputs)]
    return [board for board in boards if board.rows]


def compare_runs(paths: Sequence[str | os.PathLike[str]]) -> list[Leaderboard]:
    """The leaderboards of the runs (and ORS results) found at ``paths``; a UserError when there is nothing to
    rank (only unfinished runs, or runs of no method the report knows; sweeps have their own table)."""
    inputs = collect(paths)
    boards = leaderboards(inputs)
    if not boards:
        raise nothing_to_show(inputs, "runs compare: nothing to rank")
    return boards


#: Column headings in the page (the CSV keeps the plain names).
HEADINGS = {"acc": "ACC %", "ur": "UR %", "sr": "SR %", "wr": "WR %", "transfer_rate": "transfer rate %",
            "n_transferred": "transferred", "n_problems": "problems", "strict": "strict %", "loose": "loose %",
            "acc_original": "original accuracy %", "rb_index": "RB-index %", "asr": "ASR %",
            "queries_per_success": "queries/success", "ors": "ORS"}


def comparison_section(inputs: Inputs) -> Section:
    section = Section("compare", "Comparison across runs",
                      "One leaderboard per method when several models were run; `robusteval runs compare DIR...` "
                      "prints the same tables in the terminal or as CSV.")
    for board in leaderboards(inputs):
        if len(board.models) < 2:
            continue
        columns = [c for c in board.columns if c != "run"]
        section.add(Table(board.title, [HEADINGS.get(c, c) for c in columns],
                          [[row.get(c, "") for c in columns] for row in board.rows]))
    if not section.blocks:
        section.add(Note("Every method here was run on one model only: give runs of several models to rank them."))
    return section
