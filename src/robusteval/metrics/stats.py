"""Confidence intervals shared by every metric."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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
    return max(0.0, centre - half), min(1.0, centre + half)


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
