"""What MATCHA and its transfer give the results layer (:class:`~robusteval.report.method_results.MethodResults`):
their numbers, per-example outcomes, leaderboards, the report section (MATCHA's shows the transfers and sweeps
too), MATCHA's paper tables and the fields of its comparability key."""

from __future__ import annotations

from robusteval.attacks.matcha.results.boards import MATCHA_BOARD, TRANSFER_BOARD
from robusteval.attacks.matcha.results.comparability import matcha_key
from robusteval.attacks.matcha.results.latex import matcha_tables
from robusteval.attacks.matcha.results.outcomes import matcha_outcomes, transfer_outcomes
from robusteval.attacks.matcha.results.rates import matcha_rates, transfer_rates
from robusteval.attacks.matcha.results.section import matcha_section
from robusteval.attacks.matcha.results.show import matcha_show, transfer_show
from robusteval.report.method_results import MethodResults

RESULTS = MethodResults(rates=matcha_rates, outcomes=matcha_outcomes, boards=(MATCHA_BOARD,),
                        section=matcha_section, latex=matcha_tables, comparability=matcha_key, show=matcha_show)
#: Transfer runs are shown in MATCHA's section (no section of their own).
TRANSFER_RESULTS = MethodResults(rates=transfer_rates, outcomes=transfer_outcomes, boards=(TRANSFER_BOARD,),
                                 show=transfer_show)
