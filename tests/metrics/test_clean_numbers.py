"""Float artefacts never reach a reader (issue 28 polish): Wilson's ends are exact at 0 and n successes (the
README printed ``95% CI [5.551115123125783e-17, 0.56]``), and files written for readers hold clean numbers
(``2.7755575615628914e-17`` in leaderboard.csv)."""

from __future__ import annotations

import math

import pytest

from robusteval.metrics.formatting import clean_number, clean_numbers
from robusteval.metrics.stats import proportion, wilson_interval


@pytest.mark.parametrize("n", [1, 3, 7, 10, 40, 1000])
def test_wilson_ends_are_exact_at_none_and_all(n: int) -> None:
    low, high = wilson_interval(0, n)  # type: ignore[misc]
    assert low == 0.0 and 0 < high < 1
    low, high = wilson_interval(n, n)  # type: ignore[misc]
    assert high == 1.0 and 0 < low < 1
    assert proportion(0, n)["ci95"][0] == 0.0


def test_wilson_inside_is_unchanged() -> None:
    low, high = wilson_interval(1, 3)  # type: ignore[misc]
    assert (low, high) == pytest.approx((0.0615, 0.7923), abs=1e-4)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (2.7755575615628914e-17, 0.0),
        (-2.7755575615628914e-17, 0.0),
        (5.551115123125783e-17, 0.0),
        (0.30000000000000004, 0.3),
        (0.9999999999999999, 1.0),
        (0.5614970317550454, 0.561497031755),
        (-0.125, -0.125),
        (12.5, 12.5),
    ],
)
def test_clean_number(raw: float, clean: float) -> None:
    assert clean_number(raw) == clean
    assert repr(clean_number(raw)) == repr(clean)  # -0.0 reads 0.0


def test_clean_number_keeps_what_is_not_a_finite_float() -> None:
    assert clean_number(None) is None and math.isnan(clean_number(math.nan))  # type: ignore[arg-type]
    assert clean_number(math.inf) == math.inf


def test_clean_numbers_walks_containers_and_keeps_counts_and_text() -> None:
    data = {
        "value": 2.7755575615628914e-17,
        "n": 3,
        "ok": True,
        "ci95": [5.551115123125783e-17, 0.56],
        "pair": (0.1 + 0.2, "x"),
        "note": "0.30000000000000004",
    }
    assert clean_numbers(data) == {
        "value": 0.0,
        "n": 3,
        "ok": True,
        "ci95": [0.0, 0.56],
        "pair": (0.3, "x"),
        "note": "0.30000000000000004",
    }
