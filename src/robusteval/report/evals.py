"""The report's section for answer-first evaluations (``robusteval eval``): each run's accuracy with its n and
95% interval, so a directory holding only eval runs reports them instead of "nothing to show"."""

from __future__ import annotations

from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.model import Section, Table
from robusteval.report.rates import run_rates

#: The command answer-first evaluation runs record in their identity.
EVAL = "eval"


def eval_section(inputs: Inputs) -> Section | None:
    """A table of the finished eval runs given (None when there is none)."""
    runs = inputs.finished(EVAL)
    if not runs:
        return None
    rows = []
    for run in runs:
        accuracy = next((rate.num for rate in run_rates(run) if rate.metric == "acc"), None)
        rows.append([model_name(run), dataset_name(run), accuracy if accuracy is not None else "-"])
    return Section("eval", "Answer-first evaluation",
                   "The share of questions each model answers correctly (answer first, then its reasoning), with "
                   "its 95% Wilson interval over the n questions asked.").add(
        Table("Accuracy", ["model", "data", "ACC %"], rows))
