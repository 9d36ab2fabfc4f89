"""ORS's n and interval: the success matrix from nested counts, the bootstrap over attacked examples, the
fallback where every resample scores the same, and the warning below the minimum n."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.ors import ors_intervals, ors_scores, success_matrix


def test_the_success_matrix_reproduces_the_counts() -> None:
    matrix = success_matrix([1, 3, 4], 6)
    assert matrix.shape == (6, 3)
    assert matrix.sum(axis=0).tolist() == [1, 3, 4]
    assert all(row[0] <= row[1] <= row[2] for row in matrix)  # nested: a success stays one at larger rates
    with pytest.raises(ValueError, match="not nested"):
        success_matrix([3, 1], 6)


def test_the_interval_is_a_bootstrap_over_attacked_examples_around_the_score() -> None:
    matrices = {
        "A": {"m1": success_matrix([4, 8, 12], 40), "m2": success_matrix([2, 4, 6], 40)},
        "B": {"m1": success_matrix([10, 20, 25], 40), "m2": success_matrix([8, 15, 20], 40)},
    }
    percent = {
        model: {method: list(100 * m.mean(axis=0)) for method, m in attacks.items()}
        for model, attacks in matrices.items()
    }
    result = ors_scores(percent)
    intervals = ors_intervals(matrices, result.beta, seed=1, n_resamples=500)
    for model in ("A", "B"):
        block = intervals[model]
        assert block["ors"] == pytest.approx(result.ors[model])
        assert block["n"] == 80 and block["n_by_method"] == {"m1": 40, "m2": 40}
        low, high = block["ci95"]
        assert low < result.ors[model] < high and block["ci95_method"] == "bootstrap"
        assert block["warning"] is None  # 40 >= 30
    assert intervals == ors_intervals(matrices, result.beta, seed=1, n_resamples=500)  # seeded


def test_no_success_from_three_examples_is_not_a_certain_ten() -> None:
    # The case: "10.00" from 3 attacked examples with zero successes. Every resample scores eta = 10, so
    # the bootstrap collapses; the interval falls back to the range over the rates' Wilson intervals.
    matrices = {"A": {"m": success_matrix([0, 0, 0], 3)}}
    result = ors_scores({"A": {"m": [0.0, 0.0, 0.0]}})
    block = ors_intervals(matrices, result.beta, n_resamples=200)["A"]
    assert block["ors"] == pytest.approx(10.0) and block["n"] == 3
    low, high = block["ci95"]
    assert low < 10.0 and high == pytest.approx(10.0) and block["ci95_method"] == "wilson-rate-range"
    assert "fewer than 30" in block["warning"] and "m: n=3" in block["warning"]


def test_the_fallback_also_applies_without_resamples() -> None:
    block = ors_intervals({"A": {"m": success_matrix([1, 2], 5)}}, 2, n_resamples=0)["A"]
    low, high = block["ci95"]
    assert low < block["ors"] < high and block["ci95_method"] == "wilson-rate-range"
    assert np.isfinite([low, high]).all()
