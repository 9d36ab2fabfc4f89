"""Paired significance tests against hand-computed values: McNemar (exact and chi-square), Holm, the paired
bootstrap, and when runs are not paired."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.significance import (
    EXACT_BELOW,
    Outcomes,
    binomial_two_sided,
    holm,
    holm_adjusted,
    mcnemar,
    paired_test,
    rb_index,
    share,
)
from robusteval.metrics.stats import paired_difference_interval


def binary(outcomes: list[int], value: float | None = None) -> Outcomes:
    rows = {f"q{i}": (float(o), 1.0) for i, o in enumerate(outcomes)}
    return Outcomes(rows, share, sum(outcomes) / len(outcomes) if value is None else value)


def test_exact_mcnemar_matches_the_binomial_by_hand() -> None:
    # b=1, c=9: P(X <= 1 | n=10, 1/2) = (1 + 10) / 1024, two-sided = 22/1024.
    assert mcnemar(1, 9) == ("McNemar exact", None, 22 / 1024)
    assert mcnemar(9, 1)[2] == pytest.approx(0.021484375, abs=1e-12)
    assert binomial_two_sided(0, 0) == 1.0 and binomial_two_sided(3, 6) == 1.0  # a tie is never evidence
    assert binomial_two_sided(0, 5) == pytest.approx(2 / 32)


def test_chi_square_mcnemar_with_continuity_correction_from_25_discordant() -> None:
    # b=30, c=10: (|30 - 10| - 1)^2 / 40 = 9.025; chi-square(1) survival of 9.025 = 0.0026631...
    test, statistic, p = mcnemar(30, 10)
    assert test == "McNemar chi-square" and statistic == pytest.approx(9.025)
    assert p == pytest.approx(0.0026631, abs=1e-6)
    assert mcnemar(EXACT_BELOW - 12, 11)[0] == "McNemar exact"  # 24 discordant
    assert mcnemar(EXACT_BELOW - 12, 12)[0] == "McNemar chi-square"  # 25


def test_holm_step_down_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> kept monotone: 0.06 for the last.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1, and never below an earlier step
    assert holm([0.2, 0.01]) == pytest.approx([0.2, 0.02])
    assert holm([]) == []


def test_paired_test_uses_mcnemar_on_shares_of_the_same_examples() -> None:
    a = binary([1] * 10 + [0] * 2 + [1] * 1 + [0] * 7)  # 11/20
    b = binary([0] * 10 + [0] * 2 + [1] * 1 + [1] * 7)  # 8/20: b (A only) = 10, c (B only) = 7
    result = paired_test(a, b)
    assert result.status == "tested" and result.test == "McNemar exact" and result.discordant == (10, 7)
    assert result.p == pytest.approx(binomial_two_sided(7, 17))
    assert result.difference == pytest.approx(11 / 20 - 8 / 20) and result.n == 20
    low, high = result.ci95  # type: ignore[misc]
    assert low < result.difference < high
    adjusted = holm_adjusted([result, paired_test(a, a)])
    assert [t.p_holm for t in adjusted] == pytest.approx([min(1, 2 * result.p), 1.0])  # type: ignore[operator]


def test_identical_runs_get_p_one_and_an_interval_of_nonzero_width() -> None:
    a = binary([1, 0] * 5)
    result = paired_test(a, a)
    assert result.p == 1.0 and result.discordant == (0, 0) and result.difference == 0
    low, high = result.ci95  # type: ignore[misc]
    assert low < 0 < high  # Newcombe's paired interval: never zero width from a finite sample
    low, high = paired_difference_interval([1.0] * 5 + [0.0] * 5, [1.0] * 5 + [0.0] * 5)  # type: ignore[misc]
    assert high - low > 0.05


def test_rates_over_different_denominators_use_the_paired_bootstrap_seeded() -> None:
    # A counts examples 0-29 (success on the even ones), B counts 10-39 (success on every third).
    a = Outcomes({f"q{i}": (float(i < 30 and i % 2 == 0), float(i < 30)) for i in range(40)}, share, 15 / 30)
    b = Outcomes(
        {f"q{i}": (float(i >= 10 and i % 3 == 0), float(i >= 10)) for i in range(40)}, share, 10 / 30
    )
    first, again = paired_test(a, b, seed=3), paired_test(a, b, seed=3)
    assert first == again and first.test == "paired bootstrap" and first.discordant is None
    assert first.difference == pytest.approx(15 / 30 - 10 / 30)
    assert 0 < first.p <= 1 and first.ci95 is not None  # type: ignore[operator]
    assert first.ci95[0] < first.difference < first.ci95[1]


def test_bootstrap_p_small_for_a_large_difference_and_one_for_none() -> None:
    rows_a = {f"q{i}": (1.0, 1.0, 1.0) for i in range(40)}
    rows_b = {f"q{i}": (1.0, 0.0, float(i % 2)) for i in range(40)}
    a, b = Outcomes(rows_a, rb_index, 0.0), Outcomes(rows_b, rb_index, 0.75)
    result = paired_test(a, b)
    assert result.test == "paired bootstrap" and result.difference == pytest.approx(-0.75)
    assert result.p == pytest.approx(1 / 2001)  # no resample as far from the observed difference as 0 is
    same = paired_test(a, a)
    assert same.p == 1.0 and same.ci95 is None and "never varies" in same.note


def test_runs_that_share_no_example_are_unpaired_and_never_tested() -> None:
    a = binary([1, 1, 0])
    b = Outcomes({f"other{i}": (1.0, 1.0) for i in range(3)}, share, 1.0)
    result = paired_test(a, b)
    assert result.status == "unpaired" and result.p is None and "share no example" in result.note
    assert holm_adjusted([result])[0].p_holm is None


def test_a_number_the_outcomes_do_not_reproduce_is_not_tested() -> None:
    result = paired_test(binary([1, 0, 1, 1], value=0.5), binary([1, 0, 0, 0]))
    assert result.status == "not tested" and "do not reproduce" in result.note and result.p is None


def test_partial_overlap_is_tested_on_the_shared_examples_and_says_so() -> None:
    a = binary([1] * 12)
    b = Outcomes({f"q{i}": (0.0, 1.0) for i in range(6, 18)}, share, 0.0)
    result = paired_test(a, b)
    assert (
        result.n == 6
        and result.discordant == (6, 0)
        and "6 examples both runs hold (A 12, B 12)" in result.note
    )
    assert result.p == pytest.approx(2 / 64)


def test_statistics_match_their_definitions() -> None:
    means = np.array([[0.8, 0.6, 0.4], [0.0, 0.5, 0.5]])
    values = rb_index(means)
    assert values[0] == pytest.approx((0.8 - 0.5) / 0.8) and math.isnan(values[1])
    assert np.isnan(share(np.array([[0.0, 0.0]])))[0] and share(np.array([[0.25, 0.5]]))[0] == 0.5
