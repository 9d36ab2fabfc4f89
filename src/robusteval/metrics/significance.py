"""Is model A's number really different from model B's? Paired tests on the examples two runs share.

Two runs of the same data answer the same examples, so their numbers are compared example by example (joined on
the stable example id), never as two independent samples:

* **McNemar** where both numbers are shares of the same examples with a 0/1 outcome each (an accuracy, a rate
  whose denominator holds the same examples in both runs): only the discordant examples count, ``b`` (right in A,
  wrong in B) and ``c`` (the reverse). Exact binomial test (two-sided, p = 1/2) when ``b + c`` is below
  :data:`EXACT_BELOW`; chi-square with continuity correction, ``(|b - c| - 1)² / (b + c)`` on one degree of freedom,
  otherwise. The difference's 95% interval is Bayesian: the quantiles of ``π_b - π_c`` under the Dirichlet posterior
  of the four cells with Jeffreys' prior (½ each), so it never has zero width from a finite sample.
* **Paired bootstrap** for everything else (a rate over a denominator that differs between the runs, an index such
  as the RB-index, a mean of fractional per-problem scores): the shared examples are resampled with replacement,
  the same draw for both runs, and each run's number recomputed on the draw. p is two-sided, from the bootstrap
  distribution of the difference shifted to the null (``#{|d* - d| >= |d|}``, +1 smoothed); the interval is the
  percentile one. Where the difference never varies (both runs alike on every shared example) no interval is
  given.

A number is tested only where the stored per-example outcomes reproduce it (:attr:`Outcomes.value`); runs that
share no example are unpaired and not tested. :func:`holm` adjusts the p-values of one table together (Holm's
step-down, which controls the family-wise error without assuming the tests independent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from robusteval.metrics.stats import is_collapsed, paired_difference_interval

#: Below this many discordant pairs McNemar's p is the exact binomial one.
EXACT_BELOW = 25
#: Family-wise error rate the Holm-adjusted p-values are read against.
ALPHA = 0.05
#: Resamples of the paired bootstrap and draws of the Bayesian interval.
RESAMPLES = 2000

#: ``means`` (one row per resample, one column per per-example value) -> the number on each resample (NaN where
#: undefined).
Statistic = Callable[[np.ndarray], np.ndarray]


def share(means: np.ndarray) -> np.ndarray:
    """Rows ``(outcome, counted)`` -> the share of the counted examples (a rate with its own denominator)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(means[:, 1] > 0, means[:, 0] / np.where(means[:, 1] > 0, means[:, 1], 1), np.nan)


def rb_index(means: np.ndarray) -> np.ndarray:
    """Rows ``(correct on the original, correct on set 1, ..., set T)`` -> the RB-index (mean relative drop)."""
    original, sets = means[:, 0], means[:, 1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (original - sets.mean(axis=1)) / np.where(original > 0, original, 1)
    return np.where((original > 0) & (sets.shape[1] > 0), value, np.nan)


@dataclass(frozen=True)
class Outcomes:
    """One run's per-example outcomes behind one of its numbers.

    ``rows``: example id -> the values ``statistic`` reads (for :func:`share`: ``(outcome, counted)``, the outcome
    in [0, 1], counted 1 where the example is in the number's denominator). ``value``: the number as the run
    shows it (its summary), which the rows must reproduce."""

    rows: Mapping[str, Sequence[float]]
    statistic: Statistic
    value: float | None

    def on(self, ids: Sequence[str]) -> float | None:
        """The number over the examples ``ids`` (None where undefined)."""
        if not ids:
            return None
        value = float(self.statistic(np.array([[self.rows[i] for i in ids]], dtype=float).mean(axis=1))[0])
        return None if math.isnan(value) else value

    def reproduces(self) -> bool:
        mine = self.on(sorted(self.rows))
        if mine is None or self.value is None:
            return mine is None and self.value is None
        return math.isclose(mine, self.value, rel_tol=1e-9, abs_tol=1e-9)


@dataclass(frozen=True)
class PairedTest:
    """The comparison of two runs' numbers on their shared examples.

    ``status``: "tested", "unpaired" (no shared example) or "not tested" (``note`` says why). ``value_a`` and
    ``value_b`` are the numbers over the ``n`` shared examples (the runs' own numbers when they hold the same
    examples), ``difference`` = a - b. ``test``: "McNemar exact", "McNemar chi-square" or "paired bootstrap";
    ``discordant``: McNemar's (b, c). ``p_holm``: set by :func:`holm_adjusted` over a table."""

    status: str
    n: int = 0
    n_a: int = 0
    n_b: int = 0
    value_a: float | None = None
    value_b: float | None = None
    difference: float | None = None
    ci95: tuple[float, float] | None = None
    test: str = ""
    discordant: tuple[int, int] | None = None
    statistic: float | None = None
    p: float | None = None
    p_holm: float | None = None
    note: str = ""

    @property
    def significant(self) -> bool | None:
        """Whether the Holm-adjusted p is below :data:`ALPHA` (None when not tested or not adjusted)."""
        return None if self.p_holm is None else self.p_holm < ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "n_shared": self.n,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "value_a": self.value_a,
            "value_b": self.value_b,
            "difference": self.difference,
            "difference_ci95": list(self.ci95) if self.ci95 else None,
            "test": self.test or None,
            "discordant": list(self.discordant) if self.discordant else None,
            "statistic": self.statistic,
            "p": self.p,
            "p_holm": self.p_holm,
            "significant": self.significant,
            "note": self.note,
        }


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial p for ``k`` of ``n`` under p = 1/2: twice the smaller tail, at most 1."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar(b: int, c: int) -> tuple[str, float | None, float]:
    """(test name, chi-square statistic or None, two-sided p) for ``b`` and ``c`` discordant pairs."""
    if b + c < EXACT_BELOW:
        return "McNemar exact", None, binomial_two_sided(b, b + c)
    statistic = (abs(b - c) - 1) ** 2 / (b + c)
    return "McNemar chi-square", statistic, math.erfc(math.sqrt(statistic / 2))  # chi-square survival, 1 df


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest p times (m - i + 1), kept monotone and at most 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def holm_adjusted(tests: Sequence[PairedTest]) -> list[PairedTest]:
    """``tests`` with ``p_holm`` set over those tested (one family: the table they are shown in)."""
    tested = [i for i, t in enumerate(tests) if t.p is not None]
    adjusted = holm([float(tests[i].p) for i in tested])  # type: ignore[arg-type]
    out = list(tests)
    for i, p in zip(tested, adjusted, strict=True):
        out[i] = replace(tests[i], p_holm=p)
    return out


def _binary(outcomes: Outcomes, ids: Sequence[str]) -> bool:
    return outcomes.statistic is share and all(outcomes.rows[i][0] in (0, 1) for i in ids)


def paired_test(a: Outcomes, b: Outcomes, *, seed: int = 0, resamples: int = RESAMPLES) -> PairedTest:
    """Compare ``a`` and ``b`` on the examples both hold (see the module docstring for which test)."""
    n_a, n_b = len(a.rows), len(b.rows)
    shared = sorted(set(a.rows) & set(b.rows))
    if not shared:
        return PairedTest("unpaired", 0, n_a, n_b, note="the runs share no example: unpaired, not tested")
    for name, outcomes in (("A", a), ("B", b)):
        if not outcomes.reproduces():
            return PairedTest(
                "not tested",
                len(shared),
                n_a,
                n_b,
                note=f"run {name}'s stored per-example outcomes do not reproduce its number (does its store hold "
                "other examples too, from an earlier limit?)",
            )
    # Said only where the runs hold different examples: the numbers compared are then those over the shared ones.
    where = (
        ""
        if len(shared) == n_a == n_b
        else f"on the {len(shared)} examples both runs hold (A {n_a}, B {n_b})"
    )
    counted_alike = (
        a.statistic is share and b.statistic is share and all(a.rows[i][1] == b.rows[i][1] for i in shared)
    )
    if counted_alike and _binary(a, shared) and _binary(b, shared):
        return _mcnemar_test(a, b, [i for i in shared if a.rows[i][1]], n_a, n_b, where, seed)
    return _bootstrap_test(a, b, shared, n_a, n_b, where, seed, resamples)


def _mcnemar_test(
    a: Outcomes, b: Outcomes, ids: list[str], n_a: int, n_b: int, where: str, seed: int
) -> PairedTest:
    both = sum(1 for i in ids if a.rows[i][0] and b.rows[i][0])
    only_a = sum(1 for i in ids if a.rows[i][0] and not b.rows[i][0])
    only_b = sum(1 for i in ids if b.rows[i][0] and not a.rows[i][0])
    if not ids:
        return PairedTest(
            "not tested", 0, n_a, n_b, note="no shared example is in both numbers' denominators"
        )
    test, statistic, p = mcnemar(only_a, only_b)
    value_a, value_b = (both + only_a) / len(ids), (both + only_b) / len(ids)
    interval = paired_difference_interval(
        [float(a.rows[i][0]) for i in ids], [float(b.rows[i][0]) for i in ids]
    )
    return PairedTest(
        "tested",
        len(ids),
        n_a,
        n_b,
        value_a,
        value_b,
        value_a - value_b,
        interval,
        test,
        (only_a, only_b),
        statistic,
        p,
        note=where,
    )


def _resampled(
    stat_a: Statistic, rows_a: np.ndarray, stat_b: Statistic, rows_b: np.ndarray, seed: int, resamples: int
) -> np.ndarray:
    """The difference of the two numbers on each paired resample (the same examples drawn for both runs), drawn
    in chunks so memory stays bounded on large datasets."""
    rng = np.random.default_rng(seed)
    n = rows_a.shape[0]
    chunk = max(1, 4_000_000 // max(1, n * max(rows_a.shape[1], rows_b.shape[1])))
    out = []
    for start in range(0, resamples, chunk):
        draws = rng.integers(0, n, size=(min(chunk, resamples - start), n))
        out.append(stat_a(rows_a[draws].mean(axis=1)) - stat_b(rows_b[draws].mean(axis=1)))
    return np.concatenate(out)


def _bootstrap_test(
    a: Outcomes, b: Outcomes, ids: list[str], n_a: int, n_b: int, where: str, seed: int, resamples: int
) -> PairedTest:
    value_a, value_b = a.on(ids), b.on(ids)
    if value_a is None or value_b is None:
        return PairedTest(
            "not tested",
            len(ids),
            n_a,
            n_b,
            value_a,
            value_b,
            note=_joined(where, "a number is undefined on the shared examples"),
        )
    rows_a = np.array([a.rows[i] for i in ids], dtype=float)
    rows_b = np.array([b.rows[i] for i in ids], dtype=float)
    differences = _resampled(a.statistic, rows_a, b.statistic, rows_b, seed, resamples)
    differences = differences[np.isfinite(differences)]  # a number undefined on a draw (a zero denominator)
    observed = value_a - value_b
    if differences.size == 0:
        return PairedTest(
            "not tested",
            len(ids),
            n_a,
            n_b,
            value_a,
            value_b,
            observed,
            note=_joined(where, "undefined on every resample"),
        )
    extreme = int(np.sum(np.abs(differences - observed) >= abs(observed) - 1e-12))
    p = min(1.0, (extreme + 1) / (differences.size + 1))
    low, high = (float(q) for q in np.quantile(differences, [0.025, 0.975]))
    note = _joined(
        where,
        ""
        if differences.size == resamples
        else f"{resamples - differences.size} of {resamples} resamples undefined, left out",
    )
    interval: tuple[float, float] | None = (low, high)
    if is_collapsed(interval):  # the runs alike on every shared example: no spread to give an interval
        interval, note = None, _joined(note, "the difference never varies (no interval)")
    return PairedTest(
        "tested",
        len(ids),
        n_a,
        n_b,
        value_a,
        value_b,
        observed,
        interval,
        "paired bootstrap",
        None,
        None,
        p,
        note=note,
    )


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)
