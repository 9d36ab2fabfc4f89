"""How the runs of the three prompt-robustness modes are shown (the results layer: ``runs show``,
``results_frame``, ``runs compare`` in the terminal, as CSV and as LaTeX, the report, the study leaderboard and its
paired tests): one :class:`~robusteval.report.method_results.MethodResults` per mode, named by the registrations.

``numbers`` (every number with its n and interval, and the per-example outcomes behind it), ``boards`` (the
leaderboards), ``section`` (the report section the three modes share: it is the perturb mode's, so it is built
once).
"""

from __future__ import annotations

from robusteval.evals.prompt_robustness.results import numbers
from robusteval.evals.prompt_robustness.results.boards import PERTURB_BOARD, SEARCH_BOARD, SPREAD_BOARD
from robusteval.evals.prompt_robustness.results.section import section
from robusteval.report.method_results import MethodResults

PERTURB = MethodResults(numbers.perturb_rates, numbers.perturb_outcomes, (PERTURB_BOARD,), section)
SEARCH = MethodResults(numbers.search_rates, numbers.search_outcomes, (SEARCH_BOARD,))
SPREAD = MethodResults(numbers.spread_rates, numbers.spread_outcomes, (SPREAD_BOARD,))

__all__ = ["PERTURB", "SEARCH", "SPREAD"]
