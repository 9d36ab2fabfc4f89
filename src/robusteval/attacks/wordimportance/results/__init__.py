"""What the results layer reads of the word-importance attack (:class:`~robusteval.report.method_results.
MethodResults`): each run's success rate at every α with its n and interval, the per-example outcomes behind
them, its leaderboards (and ORS's), its report section (``hardlabel``, with the ORS tables), the ORS results
``collect`` finds (``ors.json``) and the study's ORS column. ``section``: the report section; ``boards``: the
leaderboards; ``ors``: ORS results."""

from __future__ import annotations

from collections.abc import Sequence

from robusteval.attacks.wordimportance.pipeline import STAGE
from robusteval.attacks.wordimportance.results.boards import BOARDS
from robusteval.attacks.wordimportance.results.ors import ORS_FILE, study_columns
from robusteval.attacks.wordimportance.results.section import success_rate, wordimportance_section
from robusteval.metrics.significance import Outcomes
from robusteval.report.latex_tex import Tex
from robusteval.report.method_results import MethodResults, NumberFormat
from robusteval.report.model import Rate
from robusteval.report.pairing import share_outcomes, stage_records
from robusteval.runs import Run


def run_rates(run: Run) -> list[Rate]:
    """The success rate at every perturbation rate α, over the attacked examples."""
    return [Rate(f"asr[{rate}]", success_rate(run, rate), "n_attacked")
            for rate in sorted((run.summary or {}).get("by_rate") or {}, key=float)]


def outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """Each example's success at α (``asr[<α>]``): a share of the attacked examples (a skipped one is not)."""
    if not metric.startswith("asr["):
        return None
    rate = metric[4:-1]
    rows = {}
    for i, r in stage_records(run, STAGE):
        attacked = r.get("status") != "skipped"
        rows[i] = (bool(attacked and ((r.get("per_rate") or {}).get(rate) or {}).get("success")), attacked)
    return share_outcomes(rows, value)


#: The headline of its study leaderboard: the success rate at the run's largest α.
HEADLINE = "asr[max]"


def headline_rate(rates: Sequence[Rate], metric: str) -> Rate | None:
    """The rate its headline ``asr[max]`` stands for: the success rate at the run's largest α (None for another
    metric, or a run without rates)."""
    asr = [rate for rate in rates if rate.metric.startswith("asr[")]
    if metric != HEADLINE or not asr:
        return None
    return max(asr, key=lambda rate: float(rate.metric[4:-1]))


RESULTS = MethodResults(rates=run_rates, outcomes=outcomes, boards=BOARDS, section=wordimportance_section,
                        study_columns=study_columns, result_files=(ORS_FILE,),
                        formats={"ors": NumberFormat("ORS", digits=2)},
                        tex_headings={"n_attacked": Tex(r"$n_{\mathrm{att}}$"), "rate": Tex(r"$\alpha$"),
                                      "beta": Tex(r"$\beta$")},
                        tex_note_names={"rate": "α", "beta": "β"}, metric_names={"asr": "ASR"},
                        headline_rate=headline_rate)
