"""OAD-based robustness score (ORS) for hard-label models — this project's reconstruction.

The source (a 2024 Chinese patent, "基于ORS面向硬标签输出深度学习模型鲁棒性评估方法") publishes the structure but
not the formulas. Reconstruction used here, with success rates u_ij(α_k) in percent over K perturbation
rates, for model i under attack j:

* OAD:   λ_ij(β) = (1/K) · Σ_k (q − β · u_ij(α_k))   — the average offset of the amplified success rates
  from the positive constant q (= 100);
* score: rs_ij = η · λ_ij(β) / q                      — in (0, η] when λ > 0; higher = more robust;
* β from the decision function h(z) = min_ij λ_ij(z): start at z = 1 and increase z while h(z) > 0;
  β = (first z with h(z) ≤ 0) − 1, or the cap (100) when h stays positive up to it. So β = 0 when z = 1
  already gives h ≤ 0 (some model/attack has mean success ≥ 100 %), and β spreads the scores of different
  models as far apart as keeping every λ positive allows;
* a model's ORS is the mean of rs_ij over the attacks j.

Everything formula-specific is in :func:`oad`, :func:`score_from_oad` and :func:`choose_beta`, with the
constants as named parameters, so a user with the patent's exact formula can swap these in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Q_DEFAULT = 100.0
ETA_DEFAULT = 10.0
BETA_CAP = 100

RECONSTRUCTION_NOTE = (
    "ORS formulas are robusteval's reconstruction of the patent's OAD/ORS (the patent publishes no formulas): "
    "lambda_ij = mean_k(q - beta*u_ij(alpha_k)), rs_ij = eta*lambda_ij/q, beta = (first z with "
    "min_ij lambda_ij(z) <= 0) - 1, capped at 100."
)


def oad(success_rates_percent: Sequence[float], beta: float, q: float = Q_DEFAULT) -> float:
    """λ: the mean offset of β-amplified attack success rates (percent) from the constant q."""
    if not success_rates_percent:
        raise ValueError("OAD needs at least one success rate")
    return sum(q - beta * u for u in success_rates_percent) / len(success_rates_percent)


def score_from_oad(lam: float, eta: float = ETA_DEFAULT, q: float = Q_DEFAULT) -> float:
    """rs: λ scaled to (0, η]."""
    return eta * lam / q


def choose_beta(
    rates: Sequence[Sequence[float]],
    q: float = Q_DEFAULT,
    cap: int = BETA_CAP,
    oad_fn: Callable[[Sequence[float], float, float], float] = oad,
) -> int:
    """β by the decision function h(z) = min over all (model, attack) rows of λ(z); see the module docstring."""
    if not rates:
        raise ValueError("choosing beta needs at least one (model, attack) row")
    for z in range(1, cap + 1):
        if min(oad_fn(row, z, q) for row in rates) <= 0:
            return z - 1
    return cap


@dataclass(frozen=True)
class OrsResult:
    beta: int
    oad: dict[str, dict[str, float]]  # model -> attack -> λ
    scores: dict[str, dict[str, float]]  # model -> attack -> rs
    ors: dict[str, float]  # model -> mean rs over its attacks

    def to_dict(self) -> dict[str, Any]:
        return {"beta": self.beta, "oad": self.oad, "rs": self.scores, "ors": self.ors, "note": RECONSTRUCTION_NOTE}


def ors_scores(
    success_percent: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    q: float = Q_DEFAULT,
    eta: float = ETA_DEFAULT,
    cap: int = BETA_CAP,
) -> OrsResult:
    """``success_percent[model][attack]`` = u(α_1..α_K) in percent → β (global), λ, rs and each model's ORS."""
    rows = [list(rates) for attacks in success_percent.values() for rates in attacks.values()]
    lengths = {len(row) for row in rows}
    if len(lengths) > 1:
        raise ValueError(f"every (model, attack) needs the same perturbation rates; got {sorted(lengths)} rates")
    beta = choose_beta(rows, q, cap)
    lam = {m: {a: oad(list(u), beta, q) for a, u in attacks.items()} for m, attacks in success_percent.items()}
    rs = {m: {a: score_from_oad(v, eta, q) for a, v in attacks.items()} for m, attacks in lam.items()}
    mean = {m: sum(values.values()) / len(values) for m, values in rs.items() if values}
    return OrsResult(beta, lam, rs, mean)
