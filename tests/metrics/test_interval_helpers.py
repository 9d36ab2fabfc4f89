"""The intervals that do not collapse (metrics.stats) and the formatter that never prints a point as an
interval (metrics.formatting)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.formatting import NO_INTERVAL, format_rate
from robusteval.metrics.stats import (
    bootstrap_ci,
    paired_difference_interval,
    relative_drop_interval,
    robust_interval,
    wilson_interval,
)
from robusteval.report.model import Num


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


@pytest.mark.parametrize(
    ("both", "first_only", "second_only", "neither"), [(36, 12, 2, 0), (1, 1, 7, 12), (9, 1, 0, 10)]
)
def test_newcombe_paired_interval_from_the_2x2_table(
    both: int, first_only: int, second_only: int, neither: int
) -> None:
    """Newcombe's method 10 written from the paired 2x2 table (A = both right, B, C discordant, D = neither) with
    his correction of AD - BC, against the helper, which works from per-example values."""
    n = both + first_only + second_only + neither
    k1, k2 = both + first_only, both + second_only
    (l1, u1), (l2, u2) = _wilson(k1, n), _wilson(k2, n)
    cross = both * neither - first_only * second_only
    corrected = cross - n / 2 if cross > n / 2 else (0 if cross >= 0 else cross)
    phi = corrected / math.sqrt(k1 * (n - k1) * k2 * (n - k2))
    p1, p2 = k1 / n, k2 / n
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2))
    high = p1 - p2 + math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1))
    first = [1] * both + [1] * first_only + [0] * second_only + [0] * neither
    second = [1] * both + [0] * first_only + [1] * second_only + [0] * neither
    assert paired_difference_interval(first, second) == pytest.approx((low, high))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([1] * 5, [0] * 5),  # every pair (1, 0): the bootstrap's drop is 1 in every resample
        ([1, 0, 1, 0], [1, 0, 1, 0]),  # every pair equal, half right: phi = 1 with symmetric limits
        ([1] * 8, [1] * 8),  # every example right on both
        ([0] * 3, [0] * 3),
    ],
)
def test_paired_interval_has_positive_width_where_the_bootstrap_collapses(
    first: list[int], second: list[int]
) -> None:
    pairs = np.array([first, second], dtype=float).T
    point = bootstrap_ci(pairs, lambda d: float(d[:, 0].mean() - d[:, 1].mean()), n_resamples=200)
    assert point is not None and point[0] == point[1]  # the collapse this guards against
    low, high = paired_difference_interval(first, second)
    difference = float(np.mean(first) - np.mean(second))
    assert low < high and low <= difference <= high and low >= -1 and high <= 1


def test_relative_drop_interval_contains_the_ratio_and_is_conservative() -> None:
    original, other = [1] * 8, [1] * 8
    low, high = relative_drop_interval(original, other)
    assert low < 0.0 < high
    assert relative_drop_interval([0, 0, 0], [0, 0, 0]) is None  # the denominator's interval reaches 0


def test_robust_interval_keeps_a_bootstrap_that_does_not_collapse() -> None:
    values = np.array([0, 1, 1, 0, 1, 1, 1, 0], dtype=float)
    ci, method = robust_interval(values, np.mean, lambda: (0.0, 1.0), "fallback", seed=2, n_resamples=300)
    assert method == "bootstrap" and ci == list(bootstrap_ci(values, np.mean, seed=2, n_resamples=300) or ())
    ci, method = robust_interval(
        np.ones(5), np.mean, lambda: wilson_interval(5, 5), "wilson", n_resamples=300
    )
    assert method == "wilson" and ci is not None and ci[0] < ci[1] == 1.0
    assert robust_interval(np.ones(0), np.mean, lambda: None, "x") == (None, None)


def test_a_point_is_never_printed_as_an_interval() -> None:
    assert format_rate(0.5, [0.5, 0.5]) == f"0.500 {NO_INTERVAL}"
    assert format_rate(0.5, None, n=4) == f"0.500 {NO_INTERVAL} n=4"
    assert format_rate(0.0, [0.0, 0.0004]) == "0.000 [0.0000, 0.0004]"  # more digits, not [0.000, 0.000]
    assert Num(0.0, n=8, ci=[0.0, 0.0], percent=True).detail() == f"{NO_INTERVAL} n=8"
    assert Num(0.0, n=8, ci=[0.0, 0.0004], percent=True).detail() == "[0.00, 0.04] n=8"
