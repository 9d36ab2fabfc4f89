"""How robusteval shows ``first-word`` runs: its number with n and interval, per-example outcomes for the paired
tests, a leaderboard and a report section (the results contract, ``robusteval.report.method_results``)."""

from __future__ import annotations

from pathlib import Path

from robusteval.metrics.significance import Outcomes, share
from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.compare import Board, Row
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Num, Rate, Section, Table
from robusteval.runs import Run

COMMAND = "first-word"


def accuracy(run: Run) -> Num:
    summary = run.summary or {}
    return Num(summary.get("acc"), n=summary.get("n"), ci=summary.get("acc_ci95"), runs=(str(run.path),),
               percent=True)


def rates(run: Run) -> list[Rate]:
    return [Rate("acc", accuracy(run))]


def outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    if metric != "acc":
        return None
    rows = {str(r["id"]): (float(bool(r["correct"])), 1.0) for r in run.records("first-word")}
    return Outcomes(rows, share, value)


def rows(run: Run) -> list[Row]:
    return [{"model": model_name(run), "dataset": dataset_name(run), "n": str((run.summary or {}).get("n")),
             "acc": accuracy(run)}]


def section(inputs: Inputs) -> Section | None:
    runs = inputs.finished(COMMAND)
    if not runs:
        return None
    table = Table("First-word accuracy per run (%, 95% Wilson interval)", ["model", "dataset", "n", "accuracy %", "run"],
                  [[model_name(r), dataset_name(r), str((r.summary or {}).get("n")), accuracy(r), Path(r.path).name]
                   for r in runs])
    return Section("first-word", "First-word accuracy", "Is the reply's first word the gold label?").add(table)


RESULTS = MethodResults(
    rates=rates, outcomes=outcomes, section=section,
    boards=(Board("first-word", COMMAND, "First-word accuracy: higher ranks first", ("dataset", "n", "acc"),
                  (("acc", True),), rows, ("acc", "n"), tested=(("acc", "acc", "higher"),)),))
