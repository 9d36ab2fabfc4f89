"""Confidence intervals shared by every metric."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: float, total: int, z: float = Z95) -> tuple[float, float] | None:
    """95% Wilson score interval for a proportion (well behaved near 0, 1 and for small n); ``successes`` may be
    fractional (a mean of values in [0, 1] times n)."""
    if total <= 0:
        return None
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    # At p = 0 (p = 1) the lower (upper) end is exactly 0 (1); computed, it is off by rounding (5.6e-17 at 0/3).
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    return low, 1.0 if successes >= total else min(1.0, centre + half)


def proportion(successes: int, total: int) -> dict[str, Any]:
    """``{"value", "k", "n", "ci95"}`` for a proportion; value is None when n == 0 (float | None, int, int,
    (lo, hi) | None)."""
    return {
        "value": successes / total if total else None,
        "k": successes,
        "n": total,
        "ci95": wilson_interval(successes, total),
    }


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Seeded percentile bootstrap over the first axis of ``values``."""
    data = np.asarray(values, dtype=float)
    if data.shape[0] == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.shape[0], size=(n_resamples, data.shape[0]))
    stats = np.array([statistic(data[row]) for row in idx])
    # A statistic can be undefined on a resample (a ratio over a zero accuracy): those resamples are dropped.
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return None
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def mean_std(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (None with fewer than two values) of the non-missing values."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    mean = sum(present) / len(present)
    if len(present) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in present) / (len(present) - 1))


# --- Intervals that do not collapse -------------------------------------------------------------------------
# A percentile bootstrap over n examples collapses to one point when every resample gives the same statistic
# (every example right on the original and on every perturbed set, say). A point is not certainty from a finite
# sample, so each interval below falls back, then, to an analytic interval whose width is positive for n > 0.
# Which method gave an interval is recorded beside it (``*_ci95_method``); docs/metrics.md states the rules.

BOOTSTRAP = "bootstrap"
WILSON = "wilson"
NEWCOMBE_PAIRED = "newcombe-paired"
RATIO_BOX = "newcombe-wilson-ratio-box"
#: Below this width an interval counts as collapsed (floating-point noise of equal resamples).
COLLAPSED_WIDTH = 1e-12


def z_of_level(level: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 for 0.95)."""
    return Z95 if level == 0.95 else NormalDist().inv_cdf(1 - (1 - level) / 2)


def is_collapsed(ci: Sequence[float | None] | None) -> bool:
    """True for an interval of (about) zero width; an absent interval is not collapsed, it is absent."""
    if ci is None or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return False
    return float(ci[1]) - float(ci[0]) <= COLLAPSED_WIDTH


def paired_difference_interval(
    first: Sequence[float] | np.ndarray, second: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval for the difference of two paired means of values in [0, 1]
    (Newcombe 1998, Stat Med 17:2635, method 10): Wilson intervals of the two means, combined with the
    correlation of the pairs. For 0/1 values the correlation is Newcombe's corrected phi (AD - BC reduced by n/2
    when above it, 0 between 0 and n/2); fractional scores (a share of samples right) use the same formula on
    their covariance. A constant column has no correlation: it is taken as 0, as Newcombe does for a zero
    denominator. Should that still give a point, the Wilson interval of the differences' mean mapped to [0, 1]
    (conservative for any variable bounded so). Width > 0 for n > 0; None for n = 0."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    n = int(a.shape[0])
    if n == 0 or b.shape[0] != n:
        return None
    z = z_of_level(level)
    p1, p2 = float(a.mean()), float(b.mean())
    l1, u1 = wilson_interval(p1 * n, n, z) or (0.0, 1.0)
    l2, u2 = wilson_interval(p2 * n, n, z) or (0.0, 1.0)
    sa, sb = float(a.std()), float(b.std())
    # Newcombe's correlation with his correction: the covariance ((AD - BC)/n^2 for 0/1 pairs) is reduced by
    # 1/(2n) when above it, set to 0 between 0 and 1/(2n), and kept when negative.
    covariance = float(((a - p1) * (b - p2)).mean())
    if covariance > 1 / (2 * n):
        covariance -= 1 / (2 * n)
    elif covariance > 0:
        covariance = 0.0
    phi = covariance / (sa * sb) if sa > 0 and sb > 0 else 0.0
    delta = p1 - p2
    low = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = delta + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    if high - low > COLLAPSED_WIDTH:
        return max(-1.0, low), min(1.0, high)
    # A guard (the corrected phi stays below 1, so Newcombe's limits should not meet): the differences lie in
    # [-1, 1]; mapped to [0, 1] their mean has variance at most mean * (1 - mean), so the Wilson interval of that
    # mean is a conservative interval of the difference.
    centre = (delta + 1) / 2
    low_mapped, high_mapped = wilson_interval(centre * n, n, z) or (0.0, 1.0)
    return 2 * low_mapped - 1, 2 * high_mapped - 1


def relative_drop_interval(
    original: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> tuple[float, float] | None:
    """An interval of (mean(original) - mean(other)) / mean(original) that does not collapse: the ratio's range
    over the box of the difference's Newcombe interval and the denominator's Wilson interval, each at level
    1 - (1 - level)/2 (Bonferroni: the box holds both with probability >= ``level``, so the range is a
    conservative interval), its upper end capped at 1 (the other mean is >= 0). None when the denominator's
    interval reaches 0 (the ratio is then unbounded)."""
    a = np.asarray(original, dtype=float)
    n = int(a.shape[0])
    if n == 0:
        return None
    each = 1 - (1 - level) / 2
    diff = paired_difference_interval(a, other, level=each)
    denominator = wilson_interval(float(a.mean()) * n, n, z_of_level(each))
    if diff is None or denominator is None or denominator[0] <= 0:
        return None
    corners = [d / den for d in diff for den in denominator]
    # (A - B) / A <= 1 for B >= 0: the box may overshoot it, the quantity cannot.
    return min(corners), min(1.0, max(corners))


def robust_interval(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float],
    fallback: Callable[[], tuple[float, float] | None],
    fallback_method: str,
    *,
    seed: int = 0,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> tuple[list[float] | None, str | None]:
    """``(interval, method)``: the seeded percentile bootstrap of ``statistic`` over the first axis of ``values``,
    or, where it collapses to a point or cannot be drawn (no resamples asked), ``fallback()`` (an analytic
    interval of positive width), named ``fallback_method``. ``(None, None)`` when there are no values or neither
    gives an interval of positive width: the caller shows "n too small" rather than a point."""
    if np.asarray(values).shape[0] == 0:
        return None, None
    ci = (
        bootstrap_ci(values, statistic, seed=seed, n_resamples=n_resamples, level=level)
        if n_resamples > 0
        else None
    )
    if ci is not None and not is_collapsed(ci):
        return [ci[0], ci[1]], BOOTSTRAP
    other = fallback()
    if other is None or is_collapsed(other):
        return None, None
    return [other[0], other[1]], fallback_method
