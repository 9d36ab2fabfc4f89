"""ORS: hand-computed OAD, beta search (cap, beta = 0, boundary) and scores."""

from __future__ import annotations

import pytest

from robusteval.metrics.ors import choose_beta, oad, ors_scores, score_from_oad


def test_oad_and_score_by_hand() -> None:
    # (100 - 2*10 + 100 - 2*20) / 2 = 70; rs = 10 * 70 / 100 = 7
    assert oad([10, 20], beta=2) == pytest.approx(70.0)
    assert score_from_oad(70.0) == pytest.approx(7.0)
    assert score_from_oad(70.0, eta=5, q=50) == pytest.approx(7.0)


def test_two_models_two_methods_by_hand() -> None:
    # Mean success: A/m1 15, A/m2 5, B/m1 40, B/m2 30 -> h(z) = 100 - 40z: h(2) = 20 > 0, h(3) = -20 -> beta = 2.
    result = ors_scores({"A": {"m1": [10, 20], "m2": [0, 10]}, "B": {"m1": [30, 50], "m2": [20, 40]}})
    assert result.beta == 2
    assert result.oad == {"A": {"m1": 70.0, "m2": 90.0}, "B": {"m1": 20.0, "m2": 40.0}}
    assert result.scores["A"] == pytest.approx({"m1": 7.0, "m2": 9.0})
    assert result.scores["B"] == pytest.approx({"m1": 2.0, "m2": 4.0})
    assert result.ors == pytest.approx({"A": 8.0, "B": 3.0})


def test_beta_is_capped_at_100() -> None:
    assert choose_beta([[0.0, 0.0]]) == 100  # no success at all: lambda = q for every beta
    assert choose_beta([[0.5, 0.5]]) == 100  # h(z) = 100 - 0.5z stays positive up to z = 100
    result = ors_scores({"A": {"m": [0.0, 0.0]}})
    assert result.scores["A"]["m"] == pytest.approx(10.0)  # rs = eta
    assert choose_beta([[0.5, 0.5]], cap=7) == 7


def test_beta_zero_when_z1_already_non_positive() -> None:
    assert choose_beta([[100.0, 100.0], [10.0, 20.0]]) == 0
    result = ors_scores({"A": {"m": [100.0, 100.0]}, "B": {"m": [10.0, 20.0]}})
    assert result.beta == 0
    assert result.ors == pytest.approx({"A": 10.0, "B": 10.0})


def test_beta_boundary_h_exactly_zero() -> None:
    # mean 50: h(1) = 50 > 0, h(2) = 0 <= 0 -> beta = 1
    assert choose_beta([[40.0, 60.0]]) == 1


def test_beta_when_h_first_reaches_zero_at_the_cap() -> None:
    # Mean success 1 %: h(z) = 100 - z > 0 up to z = 99, h(100) = 0 -> beta = 99, one below the cap of 100.
    assert choose_beta([[0.0, 2.0]]) == 99
    # Mean 20 %: h(4) = 20 > 0, h(5) = 0 with cap 5 -> beta = 4; cap 4 -> h stays positive up to the cap: 4.
    assert choose_beta([[20.0]], cap=5) == 4
    assert choose_beta([[20.0]], cap=4) == 4
    # Mean 16 %: h(5) = 20 > 0 at the cap of 5 (first non-positive is h(7) = -12): the cap, 5.
    assert choose_beta([[16.0]], cap=5) == 5


def test_rates_must_align() -> None:
    with pytest.raises(ValueError, match="same perturbation rates"):
        ors_scores({"A": {"m": [1.0, 2.0]}, "B": {"m": [1.0]}})
