"""The answer-first eval's results (:class:`~robusteval.report.method_results.MethodResults`): its accuracy with n
and its 95% interval (``runs show``), the per-example outcomes behind it (paired tests), its leaderboard and its
report section.

The number is the one ``runs show`` gives (:func:`robusteval.report.rates.run_rates`), so a study leaderboard's
eval cells link here and find the same value.
"""

from __future__ import annotations

from pathlib import Path

from robusteval.evals.answer_first import COMMAND, STAGE
from robusteval.metrics.significance import Outcomes
from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.compare import Board, Row
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Num, Section, Table
from robusteval.report.pairing import share_outcomes, stage_records
from robusteval.report.rates import accuracy_rates, run_rates
from robusteval.runs import Run


def eval_accuracy(run: Run) -> Num:
    """The run's accuracy with n and its interval, as ``runs show`` gives it."""
    return next((rate.num for rate in run_rates(run) if rate.metric == "acc"), Num(None))


def evals_section(inputs: Inputs) -> Section | None:
    runs = inputs.finished(COMMAND)
    if not runs:
        return None
    rows: list[list[Num | str]] = []
    for run in runs:
        summary = run.summary or {}
        accuracy = eval_accuracy(run)
        skipped = sum((summary.get("skip_reasons") or {}).values())
        rows.append(
            [
                model_name(run),
                dataset_name(run),
                str(summary.get("exemplars") or "-"),
                str(summary.get("n")),
                str(skipped),
                accuracy,
                Path(run.path).name,
            ]
        )
    table = Table(
        "Answer-first accuracy per run (%, 95% Wilson interval; n = examples answered)",
        ["model", "dataset", "exemplars", "n", "not asked", "accuracy %", "run"],
        rows,
        note="'not asked': prompts longer than the model's context, outside n.",
    )
    return Section(
        "evals",
        "Answer-first accuracy",
        "Clean accuracy (higher is better) of each `robusteval eval` "
        "run: the answer read from the first sentence of the model's reply, graded against the gold "
        "answer.",
    ).add(table)


def outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """Each answered example right or wrong (a prompt too long for the model was not asked: outside n)."""
    if metric != "acc":
        return None
    return share_outcomes({i: (bool(r.get("correct")), not r.get("skipped")) for i, r in stage_records(run, STAGE)}, value)


def rows(run: Run) -> list[Row]:
    """An answer-first eval run: its accuracy over the examples answered (n), as ``runs show`` gives it."""
    return [{"model": model_name(run), "dataset": dataset_name(run), "n": str((run.summary or {}).get("n")),
             "acc": eval_accuracy(run)}]


BOARD = Board("eval", COMMAND, "Answer-first accuracy: higher accuracy ranks first", ("dataset", "n", "acc"),
              (("acc", True),), rows, ("acc", "n"), tested=(("acc", "acc", "higher"),))

RESULTS = MethodResults(rates=accuracy_rates, outcomes=outcomes, boards=(BOARD,), section=evals_section)
