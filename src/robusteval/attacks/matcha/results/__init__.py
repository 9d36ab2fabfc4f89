"""What MATCHA and its transfer give the results layer (:class:`~robusteval.report.method_results.MethodResults`):
their numbers, per-example outcomes, leaderboards, the report section (MATCHA's shows the transfers and sweeps
too), MATCHA's paper tables and the fields of its comparability key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robusteval.attacks.matcha.results.boards import MATCHA_BOARD, TRANSFER_BOARD
from robusteval.attacks.matcha.results.comparability import matcha_key
from robusteval.attacks.matcha.results.latex import matcha_tables
from robusteval.attacks.matcha.results.outcomes import matcha_outcomes, transfer_outcomes
from robusteval.attacks.matcha.results.rates import matcha_rates, transfer_rates
from robusteval.attacks.matcha.results.section import matcha_section
from robusteval.attacks.matcha.results.show import matcha_show, transfer_show
from robusteval.attacks.matcha.results.summary_lines import (
    MATCHA_EXCLUSIONS,
    TRANSFER_EXCLUSIONS,
    left_out_lines,
)
from robusteval.metrics.matcha_summary import DENOMINATOR_NAMES, flag_texts
from robusteval.report.latex_tex import Tex
from robusteval.report.method_results import MethodResults

#: MATCHA's categories beside UR/SR/WR (answer kept but unjudged; clean reasoning already judged wrong): shares of
#: the same attacked examples, shown where some run has one so each model's categories add up, but no score.
CATEGORY_SHARES = ("unjudged_rate", "clean_cot_wrong_rate")


def error_type_counts(summary: Mapping[str, Any]) -> Mapping[str, int]:
    """The error types of a summary's successes, kind -> count (a sweep shows each kind's share)."""
    return dict((summary.get("error_types") or {}).get("counts") or {})


RESULTS = MethodResults(rates=matcha_rates, outcomes=matcha_outcomes, boards=(MATCHA_BOARD,),
                        section=matcha_section, latex=matcha_tables, comparability=matcha_key, show=matcha_show,
                        exclusion_texts=MATCHA_EXCLUSIONS, left_out_lines=left_out_lines, flag_texts=flag_texts,
                        category_shares=CATEGORY_SHARES, denominators=tuple(DENOMINATOR_NAMES),
                        readings=dict.fromkeys(CATEGORY_SHARES, "share of the attacked, no score"),
                        tex_headings={"n_attacked": Tex(r"$n_{\mathrm{att}}$"), "n_unjudged": "unjudged",
                                      "level": "Level"},
                        metric_names={"ur": "UR", "sr": "SR", "wr": "WR", "unjudged_rate": "unjudged",
                                      "clean_cot_wrong_rate": "clean wrong"},
                        sweep_counts=error_type_counts)
#: Transfer runs are shown in MATCHA's section (no section of their own).
TRANSFER_RESULTS = MethodResults(rates=transfer_rates, outcomes=transfer_outcomes, boards=(TRANSFER_BOARD,),
                                 show=transfer_show, exclusion_texts=TRANSFER_EXCLUSIONS,
                                 tex_headings={"n_original_correct": "originally correct", "n_unjudged": "unjudged",
                                               "n_transferred": "transferred", "source": "Source"},
                                 metric_names={"transfer_rate": "transfer rate"})
