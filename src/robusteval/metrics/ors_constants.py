"""The ORS's constants and its note, apart from :mod:`robusteval.metrics.ors` (which needs numpy), so that a
config and a command's ``--help`` read them without loading numpy."""

from __future__ import annotations

#: The method's source as the seed document gives it: title, office (国知局, China National Intellectual
#: Property Administration, CNIPA) and date.
SOURCE = "基于ORS面向硬标签输出深度学习模型鲁棒性评估方法 (国知局 / CNIPA, 2024-09-11)"

Q_DEFAULT = 100.0
ETA_DEFAULT = 10.0
BETA_CAP = 100

RECONSTRUCTION_NOTE = (
    f"ORS formulas are robusteval's reconstruction of the OAD/ORS of {SOURCE}, which publishes no formulas: "
    "lambda_ij = mean_k(q - beta*u_ij(alpha_k)), rs_ij = eta*lambda_ij/q, beta = (first z with "
    "min_ij lambda_ij(z) <= 0) - 1, capped at 100."
)

#: Below this many attacked examples in a (model, method) run, its ORS is flagged with a warning line: a success
#: rate from fewer examples moves by more than 1/30 per example, which beta (up to 100) amplifies into points of
#: score; with fewer than 30 the interval is wide and the score says little.
MIN_ATTACKED_DEFAULT = 30
