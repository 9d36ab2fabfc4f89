"""OAD-based robustness score (ORS) for hard-label models — this project's reconstruction.

The source, :data:`SOURCE` (a Chinese patent document as the project's seed gives it: title, office, date),
publishes the structure but not the formulas. Reconstruction used here, with success rates u_ij(α_k) in percent over K perturbation
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
from itertools import pairwise
from typing import Any

import numpy as np

from robusteval.metrics.ors_constants import (
    BETA_CAP,
    ETA_DEFAULT,
    MIN_ATTACKED_DEFAULT,
    Q_DEFAULT,
    RECONSTRUCTION_NOTE,
)
from robusteval.metrics.ors_constants import (
    SOURCE as SOURCE,  # read as metrics.ors.SOURCE (docs/ors.md)
)
from robusteval.metrics.stats import BOOTSTRAP, is_collapsed, wilson_interval, z_of_level

#: The ORS fallback interval's method: the score's range over the Wilson intervals of its success rates.
WILSON_RANGE = "wilson-rate-range"


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


def success_matrix(n_success_by_rate: Sequence[int], n_attacked: int) -> np.ndarray:
    """The [n_attacked, K] 0/1 matrix of which attacked example succeeded at which rate, from the counts alone.

    Successes are nested across rates (every rate's outcome is read off one run at the largest rate, so an
    example that succeeds within a smaller allowance succeeds within every larger one), so the counts determine
    the matrix up to the order of its rows: example r succeeds at rate k iff r < n_success[k]."""
    counts = list(n_success_by_rate)
    if any(b < a for a, b in pairwise(counts)) or (counts and counts[-1] > n_attacked):
        raise ValueError(f"success counts {counts} are not nested within {n_attacked} attacked examples")
    rows = np.arange(n_attacked)[:, None]
    return (rows < np.asarray(counts, dtype=int)[None, :]).astype(float)


#: How an ORS interval resamples: the question (the unit every method attacks), or, where a run's records carry no
#: question id, each run's attacked examples on their own (the fallback, labelled in every output).
QUESTIONS = "questions"
EXAMPLES_PER_RUN = "examples-per-run"


@dataclass(frozen=True)
class RunOutcomes:
    """One (model, method) run's attacked examples: ``matrix`` [n, K] (which succeeded at which rate) and the
    question id of each row; ``questions`` is None where the run's records carry none, and ``missing`` then
    says why (the interval falls back to resampling the run's examples on their own, and says so)."""

    matrix: np.ndarray
    questions: tuple[str, ...] | None = None
    missing: str | None = None

    def __post_init__(self) -> None:
        if self.questions is not None and len(self.questions) != self.matrix.shape[0]:
            raise ValueError(f"{len(self.questions)} question ids for {self.matrix.shape[0]} attacked examples")
        if self.questions is None and not self.missing:
            object.__setattr__(self, "missing", "no question ids given")


def _ors_of(rates_percent: Mapping[str, np.ndarray], beta: float, q: float, eta: float) -> np.ndarray:
    """ORS per resample: ``rates_percent[attack]`` is a [B, K] array of success rates in percent."""
    return np.mean([eta * (q - beta * u).mean(axis=1) / q for u in rates_percent.values()], axis=0)


def _per_run_resamples(runs: Mapping[str, RunOutcomes], rng: np.random.Generator,
                       n_resamples: int) -> dict[str, np.ndarray]:
    """The fallback: each run's attacked examples resampled on their own (all rates of an example together)."""
    return {a: 100 * r.matrix[rng.integers(0, r.matrix.shape[0], size=(n_resamples, r.matrix.shape[0]))].mean(axis=1)
            for a, r in runs.items()}


def _question_resamples(runs: Mapping[str, RunOutcomes], rng: np.random.Generator,
                        n_resamples: int) -> dict[str, np.ndarray]:
    """The cluster bootstrap: each resample draws the distinct questions with replacement and takes every
    method's outcomes (at every rate) of the drawn questions together. A method's rate in a resample is its
    successes over its attacked examples among the drawn questions; NaN where it drew none of them (a method
    that could not attack some questions), and such a resample is left out by the caller."""
    questions = sorted({q for r in runs.values() for q in r.questions or ()})
    index = {q: i for i, q in enumerate(questions)}
    n = len(questions)
    attacked: dict[str, np.ndarray] = {}
    wins: dict[str, np.ndarray] = {}
    for a, r in runs.items():
        rows = np.array([index[q] for q in r.questions or ()], dtype=int)
        attacked[a] = np.bincount(rows, minlength=n).astype(float)
        wins[a] = np.zeros((n, r.matrix.shape[1]))
        np.add.at(wins[a], rows, r.matrix)
    # A resample as the number of times each question is drawn: n draws with replacement, in blocks of rows.
    block = max(1, 4_000_000 // max(n, 1))
    counts = np.concatenate([rng.multinomial(n, np.full(n, 1 / n), size=min(block, n_resamples - start))
                             for start in range(0, n_resamples, block)]).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {a: 100 * (counts @ wins[a]) / (counts @ attacked[a])[:, None] for a in runs}


def _as_outcomes(run: RunOutcomes | np.ndarray) -> RunOutcomes:
    return run if isinstance(run, RunOutcomes) else RunOutcomes(np.asarray(run, dtype=float))


def ors_intervals(
    matrices: Mapping[str, Mapping[str, RunOutcomes | np.ndarray]],
    beta: float,
    *,
    q: float = Q_DEFAULT,
    eta: float = ETA_DEFAULT,
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
    min_attacked: int = MIN_ATTACKED_DEFAULT,
) -> dict[str, dict[str, Any]]:
    """Per model: n (the distinct questions its methods attacked; per method beside it) and a 95% interval of
    its ORS.

    The unit is the question: every method attacks the same questions, so their outcomes are not independent.
    The bootstrap (:func:`_question_resamples`) draws the model's distinct attacked questions with replacement
    and takes all methods' outcomes of a drawn question, at every rate, together; it recomputes the ORS at the
    fixed ``beta`` (β is a scale chosen once on the full data; re-choosing it per resample would change the
    units being compared). Where a run gives no question ids (a bare matrix, or a :class:`RunOutcomes` without
    ``questions``: old runs), the model's interval falls back to resampling each run's examples on its own and
    says so (``resampling``: ``examples-per-run``, ``fallback``: why); n is then the largest run's attacked
    examples (distinct questions unknown; ``n_unit`` says so). Where every resample gives the same score (no
    success at any rate, say, or methods whose successes exactly offset each other question by question), the
    interval falls back to one of positive width: the ORS is linear in each success rate, so its range over the
    Wilson intervals of the rates (each rate at its bound in the direction that lowers or raises the score)
    bounds it conservatively. ``warning`` is set when a run has fewer than ``min_attacked`` attacked
    examples."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Any]] = {}
    for model, given in matrices.items():
        runs = {attack: _as_outcomes(run) for attack, run in given.items()}
        attacks = {attack: run.matrix for attack, run in runs.items()}
        n_by_method = {attack: int(matrix.shape[0]) for attack, matrix in attacks.items()}
        missing = {a: str(r.missing) for a, r in runs.items() if r.questions is None}
        paired = not missing
        n_questions = len({qid for r in runs.values() for qid in r.questions or ()}) if paired else None
        point = float(_ors_of({a: 100 * m.mean(axis=0, keepdims=True) for a, m in attacks.items()}, beta, q, eta)[0])
        ci: list[float] | None = None
        method: str | None = None
        used = 0
        if n_resamples > 0 and all(n_by_method.values()):
            resampled = (_question_resamples(runs, rng, n_resamples) if paired
                         else _per_run_resamples(runs, rng, n_resamples))
            scores = _ors_of(resampled, beta, q, eta)
            scores = scores[np.isfinite(scores)]  # resamples where a method drew none of its questions
            used = int(scores.size)
            if used:
                low, high = np.quantile(scores, [(1 - level) / 2, 1 - (1 - level) / 2])
                if not is_collapsed((float(low), float(high))):
                    ci, method = [float(low), float(high)], BOOTSTRAP
        if ci is None and all(n_by_method.values()):
            bounds = {a: [wilson_interval(float(k), m.shape[0], z_of_level(level)) or (0.0, 1.0)
                          for k in m.sum(axis=0)] for a, m in attacks.items()}
            # A larger success rate lowers the score (beta >= 0): the upper rates give the lower bound.
            worst = {a: 100 * np.array([[b[1] for b in rates]]) for a, rates in bounds.items()}
            best = {a: 100 * np.array([[b[0] for b in rates]]) for a, rates in bounds.items()}
            low, high = float(_ors_of(worst, beta, q, eta)[0]), float(_ors_of(best, beta, q, eta)[0])
            if not is_collapsed((low, high)):
                ci, method = [low, high], WILSON_RANGE
        small = {a: n for a, n in n_by_method.items() if n < min_attacked}
        out[model] = {
            "ors": point,
            "n": n_questions if n_questions is not None else max(n_by_method.values(), default=0),
            "n_unit": "distinct questions attacked" if paired else
                      "attacked examples of the largest run (records carry no question id: distinct questions unknown)",
            "n_questions": n_questions, "n_by_method": n_by_method, "ci95": ci, "ci95_method": method,
            "resampling": QUESTIONS if paired else EXAMPLES_PER_RUN,
            "fallback": None if paired else ("no question ids (" + "; ".join(f"{a}: {why}" for a, why in missing.items())
                                             + "): each run's attacked examples resampled on their own"),
            "resamples_used": used, "min_attacked": min_attacked,
            "warning": (f"ORS of {model} rests on few attacked examples ("
                        + ", ".join(f"{a}: n={n}" for a, n in small.items())
                        + f"; fewer than {min_attacked}): a weak reading, see its interval") if small else None,
        }
    return out
