"""MATCHA's and transfer's per-example outcomes behind their numbers, for the paired tests
(:func:`robusteval.report.pairing.run_outcomes`): each example's category counted as the run counted it
(:func:`robusteval.metrics.matcha.outcome` under the run's counting rules)."""

from __future__ import annotations

from robusteval.attacks.matcha.results.commands import OUTCOME_STAGE, TRANSFER_STAGE
from robusteval.metrics import matcha as matcha_metrics
from robusteval.metrics.matcha_summary import counting
from robusteval.metrics.significance import Outcomes
from robusteval.report.pairing import share_outcomes, stage_records
from robusteval.runs import Run

#: The outcome each MATCHA rate counts; every attacked example is in their denominator (an unjudged one, or one
#: whose clean reasoning the judge rejects, is its own category: ``metrics.matcha``).
MATCHA_OUTCOME = {key: kind for key, kind, _ in matcha_metrics.CATEGORIES}


def matcha_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """ACC over the questions that fit; UR/SR/WR and the other categories over every attacked question."""
    records = stage_records(run, OUTCOME_STAGE)
    if metric == "acc":
        return share_outcomes({i: (bool(r.get("clean_correct")), not r.get("too_long")) for i, r in records}, value)
    if metric not in MATCHA_OUTCOME:
        return None  # the rates over another denominator (ur[ours]) are not tested
    rule = counting(run.summary or {})
    kinds = {i: matcha_metrics.outcome(r, rule) for i, r in records}
    return share_outcomes({i: (kind == MATCHA_OUTCOME[metric], kind is not None) for i, kind in kinds.items()},
                          value)


def transfer_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """The transfer rate: successes among the questions the target answers correctly originally."""
    if metric != "transfer_rate":
        return None
    rows = {}
    for i, r in stage_records(run, TRANSFER_STAGE):
        kind = matcha_metrics.outcome(
            {
                "attacked": True,
                "answer_kept": r.get("answer_kept"),
                "reasoning_wrong": r.get("reasoning_wrong"),
                "clean_cot_wrong": r.get("clean_cot_wrong"),
            },
            counting(run.summary or {}),
        )
        # Every question answered correctly originally is in the denominator, unjudged ones included.
        rows[i] = (kind == "success", bool(r.get("original_correct")))
    return share_outcomes(rows, value)
