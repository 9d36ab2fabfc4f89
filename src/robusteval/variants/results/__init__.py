"""VAR-MATH's results (:class:`~robusteval.report.method_results.MethodResults`): the strict and loose scores, the
drop from the original problems and every diagnosis category's share (``runs show``); the per-problem scores
behind them (paired tests); its leaderboard, paired with the original run (:mod:`.board`), and its report
section (:mod:`.section`)."""

from __future__ import annotations

from collections.abc import Mapping

from robusteval.metrics.significance import Outcomes, share
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Rate
from robusteval.runs import Run
from robusteval.variants.results import section as varmath
from robusteval.variants.results.board import BOARD


def rates(run: Run) -> list[Rate]:
    out = [Rate(m, varmath.accuracy(run, m), "n_problems") for m in ("strict", "loose")]
    diagnosis = varmath.diagnosis_of(run)
    if diagnosis is None:  # a run on the original problems
        return out
    # The drop from the original problems (paired interval) and every category's share of the problems.
    label = varmath.diagnosis_label(diagnosis)
    out += [Rate(f"drop[{score},{kind}]", varmath.drop(diagnosis, score, kind, run), "n_with_original",
                 note=label if (score, kind) == ("strict", "relative") else "")
            for score in ("loose", "strict") for kind in ("absolute", "relative")]
    return out + [Rate(f"share[{varmath.CATEGORY_NAMES[name]}]", varmath.category_share(diagnosis, name, run),
                       "n_problems", extra={"diagnosis": label}) for name in varmath.SHOWN_CATEGORIES]


def outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """Each problem's strict or loose score (the summary's per-problem rows)."""
    if metric not in ("strict", "loose"):
        return None
    problems = (run.summary or {}).get("problems") or []
    return Outcomes(
        {
            str(p["problem"]): (float(p[metric]), 1.0)
            for p in problems
            if isinstance(p, Mapping) and "problem" in p
        },
        share,
        value,
    )


#: The scores are accuracies: "higher is better", never "more robust" (the drop says how robust).
RESULTS = MethodResults(rates=rates, outcomes=outcomes, boards=(BOARD,), section=varmath.variants_section,
                        readings={"strict": "{better} is better", "loose": "{better} is better"},
                        tex_headings={"n_problems": "problems", "instances": "Instances", "diagnosis": "Diagnosis"})
