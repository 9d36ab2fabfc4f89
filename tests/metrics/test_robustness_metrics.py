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
    # Every example right on the original and wrong on "worse": every paired resample has drop 1, so the bootstrap
    # collapses to (1, 1); the interval falls back to Newcombe's paired score interval, of positive width, and
    # says so. "better" mirrors it at -1.
    summary = robustness_summary([True] * 5, {"worse": [False] * 5}, n_resamples=200)
    worse = summary["sets"]["worse"]
    assert worse["drop"] == 1.0 and worse["drop_ci95_method"] == "newcombe-paired"
    lo, hi = worse["drop_ci95"]
    assert lo < 1.0 == hi
    summary = robustness_summary([False] * 5, {"better": [True] * 5}, n_resamples=200)
    better = summary["sets"]["better"]
    assert better["drop"] == -1.0 and better["drop_ci95"][0] == -1.0 < better["drop_ci95"][1]
    # Paired rows (original, A): six (1, 1), two (1, 0), two (0, 0) -> a resample's drop is the share of (1, 0)
    # rows it drew, never negative. Set C: eight (1, 1), one (0, 1), one (0, 0) -> never positive.
    original = [True] * 8 + [False] * 2
    summary = robustness_summary(original, {"A": [True] * 6 + [False] * 4, "C": [True] * 9 + [False]},
                                 seed=3, n_resamples=500)
    lo, hi = summary["sets"]["A"]["drop_ci95"]
    assert 0.0 <= lo <= 0.2 <= hi and summary["sets"]["A"]["drop_ci95_method"] == "bootstrap"
    lo, hi = summary["sets"]["C"]["drop_ci95"]
    assert lo <= -0.1 <= hi <= 0.0


def test_identical_sets_give_zero_with_an_interval_of_positive_width() -> None:
    # The case: RB-index 0.0 % [0.0, 0.0] n=8. Every resample gives 0; the ratio box does not collapse.
    original = [True, False, True, True, True, True, False, True]
    summary = robustness_summary(original, {"same": list(original)}, n_resamples=200)
    assert summary["rb_index"] == 0.0
    lo, hi = summary["rb_index_ci95"]
    assert lo < 0.0 < hi and summary["rb_index_ci95_method"] == "newcombe-wilson-ratio-box"
    lo, hi = summary["sets"]["same"]["drop_ci95"]
    assert lo < 0.0 < hi


def test_a_set_that_changed_nothing_is_left_out() -> None:
    original = [True] * 6 + [False] * 2
    perturbed = [True] * 4 + [False] * 4
    summary = robustness_summary(original, {"A": perturbed, "empty": list(original)},
                                 changed_by_set={"A": [True] * 8, "empty": [False] * 8}, n_resamples=200)
    assert summary["T"] == 1 and summary["sets_excluded"] == ["empty"]
    assert summary["rb_index"] == pytest.approx((0.75 - 0.5) / 0.75)  # not the mean with the empty set's 0
    assert summary["sets"]["empty"]["n_changed"] == 0 and "changed 0 of 8" in summary["sets"]["empty"]["excluded_reason"]
    # A higher threshold drops A too: nothing left to average, the index is undefined (not 0).
    summary = robustness_summary(original, {"A": perturbed}, changed_by_set={"A": [True] * 3 + [False] * 5},
                                 min_changed=4, n_resamples=200)
    assert summary["T"] == 0 and summary["rb_index"] is None and summary["rb_index_ci95"] is None
    assert summary["sets"]["A"]["excluded_reason"] == "changed 3 of 8 texts, fewer than min_changed 4"


def test_a_set_that_changed_every_text_is_not_said_to_measure_the_original() -> None:
    """--min-changed 13 over 12 examples leaves out a set that changed all 12: the reason is the threshold, not a
    set that "measures the original again" (said only of a set that changed nothing)."""
    original, perturbed = [True] * 8 + [False] * 4, [True] * 6 + [False] * 6
    summary = robustness_summary(original, {"A": perturbed, "empty": list(original)},
                                 changed_by_set={"A": [True] * 12, "empty": [False] * 12}, min_changed=13,
                                 n_resamples=50)
    assert summary["sets"]["A"]["excluded_reason"] == ("changed 12 of 12 texts, fewer than min_changed 13, which is "
                                                       "more than the 12 examples: no set can reach it")
    assert summary["sets"]["empty"]["excluded_reason"].endswith(": it measures the original again")


def test_changed_only_is_on_the_changed_examples() -> None:
    original = [True, True, True, False]
    perturbed = [False, True, True, False]
    summary = robustness_summary(original, {"A": perturbed}, changed_by_set={"A": [True, True, False, False]},
                                 changed_only=True, n_resamples=200)
    block = summary["sets"]["A"]["changed_only"]
    assert block["n"] == 2 and block["acc_original"] == 1.0 and block["acc"] == 0.5 and block["drop"] == 0.5


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="set X"):
        robustness_summary([True, False], {"X": [True]})
