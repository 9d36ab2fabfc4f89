"""ORS's n and interval: the success matrix from nested counts, n as the distinct questions attacked, the bootstrap
over questions (all methods of a question together), the labelled per-run fallback for runs without question ids,
the fallback where every resample scores the same, and the warning below the minimum n."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.ors import RunOutcomes, ors_intervals, ors_scores, success_matrix


def ids(n: int, start: int = 0) -> tuple[str, ...]:
    return tuple(f"q{i}" for i in range(start, start + n))


def succeeding(questions: range, n: int = 40) -> np.ndarray:
    """One rate: the questions of ``questions`` (out of ``n``) succeed."""
    return np.array([[1.0 if i in questions else 0.0] for i in range(n)])


def test_the_success_matrix_reproduces_the_counts() -> None:
    matrix = success_matrix([1, 3, 4], 6)
    assert matrix.shape == (6, 3)
    assert matrix.sum(axis=0).tolist() == [1, 3, 4]
    assert all(row[0] <= row[1] <= row[2] for row in matrix)  # nested: a success stays one at larger rates
    with pytest.raises(ValueError, match="not nested"):
        success_matrix([3, 1], 6)


def test_the_interval_is_a_bootstrap_over_the_questions_around_the_score() -> None:
    matrices = {
        "A": {"m1": RunOutcomes(success_matrix([4, 8, 12], 40), ids(40)),
              "m2": RunOutcomes(success_matrix([2, 4, 6], 40), ids(40))},
        "B": {"m1": RunOutcomes(success_matrix([10, 20, 25], 40), ids(40)),
              "m2": RunOutcomes(success_matrix([8, 15, 20], 40), ids(40))},
    }
    percent = {
        model: {method: list(100 * run.matrix.mean(axis=0)) for method, run in attacks.items()}
        for model, attacks in matrices.items()
    }
    result = ors_scores(percent)
    intervals = ors_intervals(matrices, result.beta, seed=1, n_resamples=500)
    for model in ("A", "B"):
        block = intervals[model]
        assert block["ors"] == pytest.approx(result.ors[model])
        # Both methods attacked the same 40 questions: n is 40, not 80.
        assert block["n"] == block["n_questions"] == 40 and block["n_by_method"] == {"m1": 40, "m2": 40}
        assert block["resampling"] == "questions" and block["fallback"] is None
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


def test_n_is_the_distinct_questions_and_each_method_keeps_its_own_count() -> None:
    # Twelve questions; the second method could not attack the last one.
    matrices = {"A": {"m1": RunOutcomes(success_matrix([3, 6], 12), ids(12)),
                      "m2": RunOutcomes(success_matrix([2, 5], 11), ids(11))}}
    block = ors_intervals(matrices, 1, seed=3, n_resamples=400)["A"]
    assert block["n"] == 12 and block["n_unit"] == "distinct questions attacked"
    assert block["n_by_method"] == {"m1": 12, "m2": 11}
    # Questions attacked by one method only add to n once; disjoint question sets add up.
    disjoint = {"A": {"m1": RunOutcomes(success_matrix([3, 6], 12), ids(12)),
                      "m2": RunOutcomes(success_matrix([2, 5], 12), ids(12, start=6))}}
    assert ors_intervals(disjoint, 1, n_resamples=50)["A"]["n"] == 18


def widths(first: range, second: range, *, paired: bool) -> float:
    """The interval width of a model whose two methods succeed (one rate) on ``first`` and ``second`` of 40
    questions, at beta = 1: ORS = 10 - 0.1 * (mean success rate in percent of the two methods)."""
    runs = {"m1": succeeding(first), "m2": succeeding(second)}
    given = {m: RunOutcomes(matrix, ids(40)) if paired else matrix for m, matrix in runs.items()}
    block = ors_intervals({"A": given}, 1, seed=11, n_resamples=4000)["A"]
    assert block["ci95_method"] == "bootstrap" and block["resampling"] == ("questions" if paired
                                                                           else "examples-per-run")
    low, high = block["ci95"]
    return high - low


def test_the_resample_keeps_the_methods_of_a_question_together() -> None:
    # Hand-computed: resampling questions, the model's mean success over a resample is the mean over the drawn
    # questions of s_q = (success of m1 + success of m2) / 2, so sd(ORS) = 10 * sd(s_q) / sqrt(40) and the 95%
    # interval is about 2 * 1.96 of that wide.
    # Perfectly correlated (both methods succeed on questions 0-19): s_q is 0 or 1, sd 0.5 -> width 3.10.
    # Anti-correlated (m1 on 0-19, m2 on 15-34): s_q is 1/2 on 30 questions, 1 on 5 and 0 on 5, sd 0.25 -> 1.55.
    # Resampling each method on its own ignores the pairing: sd(ORS) = 10 * 0.5 / sqrt(2 * 40) -> 2.19 in both.
    correlated = widths(range(0, 20), range(0, 20), paired=True)
    anti = widths(range(0, 20), range(15, 35), paired=True)
    assert correlated == pytest.approx(2 * 1.96 * 10 * 0.5 / np.sqrt(40), rel=0.15)
    assert anti == pytest.approx(2 * 1.96 * 10 * 0.25 / np.sqrt(40), rel=0.15)
    independent = 2 * 1.96 * 10 * 0.5 / np.sqrt(80)
    assert widths(range(0, 20), range(0, 20), paired=False) == pytest.approx(independent, rel=0.15)
    assert widths(range(0, 20), range(15, 35), paired=False) == pytest.approx(independent, rel=0.15)


def test_successes_that_offset_question_by_question_are_not_a_certain_score() -> None:
    # m1 succeeds on questions 0-19 and m2 on 20-39: every resample of questions has a mean success of exactly
    # 50 %, so the bootstrap collapses; the interval is the Wilson rate range, never a point.
    runs = {"m1": RunOutcomes(succeeding(range(0, 20)), ids(40)), "m2": RunOutcomes(succeeding(range(20, 40)), ids(40))}
    block = ors_intervals({"A": runs}, 1, n_resamples=300)["A"]
    low, high = block["ci95"]
    assert block["ci95_method"] == "wilson-rate-range" and block["ors"] == pytest.approx(5.0)
    assert low < 5.0 - 1 and high > 5.0 + 1  # each rate's Wilson interval at n=40 spans about +-15 points


def test_runs_without_question_ids_fall_back_and_say_so() -> None:
    matrices = {"A": {"m1": success_matrix([3, 6], 12),
                      "m2": RunOutcomes(success_matrix([2, 5], 12), None, "no stored records (results.sqlite)")}}
    block = ors_intervals(matrices, 1, seed=2, n_resamples=300)["A"]
    assert block["resampling"] == "examples-per-run" and block["n_questions"] is None
    assert block["n"] == 12 and "distinct questions unknown" in block["n_unit"]
    assert "m1: no question ids given" in block["fallback"]
    assert "m2: no stored records (results.sqlite)" in block["fallback"]
    low, high = block["ci95"]
    assert low < block["ors"] < high
    with pytest.raises(ValueError, match="2 question ids for 3"):
        RunOutcomes(success_matrix([1], 3), ids(2))


def test_a_method_that_drew_none_of_its_questions_leaves_the_resample_out() -> None:
    # m2 attacked one question of 12: about (11/12)^12 = 35 % of the resamples draw none of it.
    matrices = {"A": {"m1": RunOutcomes(success_matrix([3], 12), ids(12)),
                      "m2": RunOutcomes(success_matrix([1], 1), ids(1))}}
    block = ors_intervals(matrices, 1, seed=5, n_resamples=1000)["A"]
    assert block["n"] == 12 and block["n_by_method"] == {"m1": 12, "m2": 1}
    assert 550 < block["resamples_used"] < 750
    low, high = block["ci95"]
    assert np.isfinite([low, high]).all() and low < high
