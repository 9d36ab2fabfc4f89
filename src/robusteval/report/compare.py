"""Leaderboards: runs of one method side by side, ranked by the method's headline number.

``compare_runs(paths)`` is what ``robusteval runs compare`` prints (terminal table or CSV) and what the HTML
report's comparison section shows, so the two never disagree; every number in it is the one the method's section
builder makes (same value, n and interval), so the leaderboards never disagree with the section tables. Models are ranked among runs of the same task
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

from robusteval.report import hardlabel, matcha, perturbed, varmath
from robusteval.report.collect import (
    MATCHA,
    ROBUSTNESS,
    TRANSFER,
    VARIANTS,
    WORDIMPORTANCE,
    Inputs,
    OrsResult,
    collect,
    dataset_name,
    model_name,
    nothing_to_show,
    short_model,
)
from robusteval.report.model import Note, Num, Section, Table
from robusteval.runs import Run

Row = dict[str, Num | str]


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


def _value(row: dict[str, Any], name: str, *, descending: bool) -> tuple[bool, float]:
    """Sort key: missing values last, then by value in the direction asked."""
    num = row.get(name)
    value = num.value if isinstance(num, Num) else None
    if value is None:
        return True, 0.0
    return False, -value if descending else value


def _ranked(rows: list[Row], task: Sequence[str], order: Sequence[tuple[str, bool]]) -> list[Row]:
    """Rows grouped by task, best first inside each group (by each (column, descending) of ``order`` in
    turn); ``rank`` counts within the group."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[c]) for c in task), []).append(row)
    out = []
    for task_key in sorted(groups):
        ordered = sorted(groups[task_key], key=lambda r: tuple(_value(r, c, descending=d) for c, d in order))
        out += [{"rank": str(i), **row} for i, row in enumerate(ordered, 1)]
    return out


# One row per run (per model of an ORS result); every number is the section builder's own Num, so the report's
# tables and the leaderboards show the same value with the same n and interval.

def _matcha_rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    return [{"model": model_name(run), "dataset": dataset_name(run), "level": matcha.run_level(run),
             "variant": matcha.run_variant(run), "n": str(summary.get("n")),
             **{m: matcha.rate(summary, m, run) for m in matcha.METRICS}}]


def _transfer_rows(run: Run) -> list[Row]:
    return [{"model": model_name(run), "source": matcha.transfer_source(run),
             "n_transferred": str((run.summary or {}).get("n_transferred")),
             "transfer_rate": matcha.transfer_rate(run)}]


def _variants_rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    return [{"model": model_name(run), "instances": Path(str(summary.get("instances") or "?")).name,
             "n_problems": str(summary.get("n_problems")), "strict": varmath.accuracy(run, "strict"),
             "loose": varmath.accuracy(run, "loose")}]


def _robustness_rows(run: Run) -> list[Row]:
    return [{"model": model_name(run), "dataset": dataset_name(run),
             "sets": str((run.summary or {}).get("sets_spec")),
             "acc_original": perturbed.accuracy(run, perturbed.ORIGINAL), "rb_index": perturbed.rb_index(run)}]


def _wordimportance_rows(run: Run) -> list[Row]:
    top = hardlabel.top_rate(run)
    return [{"model": model_name(run), "dataset": dataset_name(run), "method": hardlabel.method_name(run),
             "rate": str(top), "asr": hardlabel.success_rate(run, top) if top else Num(None),
             "queries_per_success": hardlabel.queries_per_success(run, top) if top else Num(None)}]


def _ors_rows(result: OrsResult) -> list[Row]:
    return [{"model": short_model(model), "beta": str(result.data.get("beta")),
             "ors": hardlabel.ors_score(result, model)} for model in result.data.get("ors") or {}]


@dataclass(frozen=True)
class Board:
    """How one method's leaderboard is made: whose rows, which columns group a task, what ranks first."""

    method: str
    command: str | None  # the runs' command; None: ORS results
    title: str
    task: tuple[str, ...]  # rows are ranked among rows with the same values here
    shown: tuple[str, ...]  # columns between "model" and "run"
    order: tuple[tuple[str, bool], ...]  # (column, descending), best first
    rows: Callable[[Any], list[Row]]


BOARDS = (
    Board("matcha", MATCHA, "MATCHA: higher UR (answer and reasoning survive) ranks first",
          ("dataset", "level", "variant"), ("dataset", "level", "variant", "n", "acc", "ur", "sr", "wr"),
          (("ur", True), ("sr", False)), _matcha_rows),
    Board("transfer", TRANSFER, "Transfer: lower transfer rate ranks first", ("source",),
          ("source", "n_transferred", "transfer_rate"), (("transfer_rate", False),), _transfer_rows),
    Board("variants", VARIANTS, "VAR-MATH: higher strict score ranks first", ("instances",),
          ("instances", "n_problems", "strict", "loose"), (("strict", True), ("loose", True)), _variants_rows),
    Board("robustness", ROBUSTNESS, "Perturbed benchmarks: lower RB-index ranks first", ("dataset", "sets"),
          ("dataset", "sets", "acc_original", "rb_index"), (("rb_index", False),), _robustness_rows),
    Board("wordimportance", WORDIMPORTANCE, "Hard-label attacks: lower success rate at the largest α ranks first",
          ("dataset", "method", "rate"), ("dataset", "method", "rate", "asr", "queries_per_success"),
          (("asr", False),), _wordimportance_rows),
    Board("ors", None, "ORS: higher score ranks first", ("run",), ("beta", "ors"), (("ors", True),), _ors_rows),
)


def leaderboard(board: Board, inputs: Inputs) -> Leaderboard:
    sources: Iterable[Any] = inputs.ors if board.command is None else [
        run for run in inputs.of(board.command) if run.summary]
    rows = [{**row, "run": str(source.path)} for source in sources for row in board.rows(source)]
    return Leaderboard(board.method, board.title, ["rank", "model", *board.shown, "run"],
                       _ranked(rows, board.task, board.order))


def leaderboards(inputs: Inputs) -> list[Leaderboard]:
    """Every method's leaderboard that has at least one run (direct runs only: sweeps have their own table)."""
    boards = [leaderboard(board, inputs) for board in BOARDS]
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
