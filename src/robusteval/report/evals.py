"""The report's answer-first section: each ``robusteval eval`` run's accuracy, with n and its 95% interval.

The number is the one ``runs show`` gives (:func:`robusteval.report.rates.run_rates`), so a study leaderboard's
eval cells link here and find the same value.
"""

from __future__ import annotations

from pathlib import Path

from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.model import Num, Section, Table
from robusteval.report.rates import run_rates
from robusteval.runs import Run

COMMAND = "eval"


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
