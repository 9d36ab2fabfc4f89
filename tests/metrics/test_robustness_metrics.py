"""RB-index: hand computation, undefined cases and the paired bootstrap."""

from __future__ import annotations

import pytest

from robusteval.metrics.robustness import rb_index, robustness_summary


def test_rb_index_by_hand() -> None:
    # (0.2 + 0.1 - 0.1) / (3 * 0.8)
    assert rb_index(0.8, [0.6, 0.7, 0.9]) == pytest.approx(0.2 / 2.4)
    assert rb_index(0.5, [0.6]) == pytest.approx(-0.2)  # better on perturbed text: negative
    assert rb_index(0.0, [0.1]) is None
    assert rb_index(0.5, []) is None


def test_summary_from_correctness_vectors() -> None:
    original = [True] * 8 + [False] * 2  # 0.8
    sets = {
        "A": [True] * 6 + [False] * 4,  # 0.6
        "B": [True] * 7 + [False] * 3,  # 0.7
        "C": [True] * 9 + [False] * 1,  # 0.9
    }
    summary = robustness_summary(original, sets, seed=3, n_resamples=500)
    assert summary["acc_original"] == pytest.approx(0.8)
    assert summary["acc"] == pytest.approx({"A": 0.6, "B": 0.7, "C": 0.9})
    assert summary["sets"]["A"]["drop"] == pytest.approx(0.2)
    assert summary["sets"]["C"]["relative_drop"] == pytest.approx(-0.125)
    assert summary["rb_index"] == pytest.approx(0.2 / 2.4)
    lo, hi = summary["rb_index_ci95"]
    assert lo <= summary["rb_index"] <= hi
    again = robustness_summary(original, sets, seed=3, n_resamples=500)
    assert again["rb_index_ci95"] == summary["rb_index_ci95"]  # seeded


def test_drop_interval_is_original_minus_perturbed() -> None:
    # Every example right on the original: "worse" is wrong everywhere, so every paired resample has
    # drop = 1 - 0 = 1 and the interval is exactly (1, 1); "better" (all wrong originals, all right perturbed)
    # gives (-1, -1).
    summary = robustness_summary([True] * 5, {"worse": [False] * 5}, n_resamples=200)
    assert summary["sets"]["worse"]["drop"] == 1.0 and summary["sets"]["worse"]["drop_ci95"] == (1.0, 1.0)
    summary = robustness_summary([False] * 5, {"better": [True] * 5}, n_resamples=200)
    assert summary["sets"]["better"]["drop"] == -1.0 and summary["sets"]["better"]["drop_ci95"] == (-1.0, -1.0)
    # Paired rows (original, A): six (1, 1), two (1, 0), two (0, 0) -> a resample's drop is the share of (1, 0)
    # rows it drew, never negative. Set C: eight (1, 1), one (0, 1), one (0, 0) -> never positive.
    original = [True] * 8 + [False] * 2
    summary = robustness_summary(original, {"A": [True] * 6 + [False] * 4, "C": [True] * 9 + [False]},
                                 seed=3, n_resamples=500)
    lo, hi = summary["sets"]["A"]["drop_ci95"]
    assert 0.0 <= lo <= 0.2 <= hi
    lo, hi = summary["sets"]["C"]["drop_ci95"]
    assert lo <= -0.1 <= hi <= 0.0


def test_identical_sets_give_zero_with_degenerate_ci() -> None:
    original = [True, False, True, True]
    summary = robustness_summary(original, {"same": list(original)}, n_resamples=200)
    assert summary["rb_index"] == 0.0
    assert summary["rb_index_ci95"] == (0.0, 0.0)


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="set X"):
        robustness_summary([True, False], {"X": [True]})
