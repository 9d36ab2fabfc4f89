"""MATCHA metrics against hand-computed numbers, and the exact UR + SR + WR = 1 invariant."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robusteval.metrics.matcha import matcha_metrics, outcome, outcome_rates, transfer_metrics
from robusteval.metrics.stats import wilson_interval


def rec(clean_correct: bool, attacked: bool, answer_kept: bool = False, reasoning_wrong: bool | None = None) -> dict:
    return {
        "clean_correct": clean_correct,
        "attacked": attacked,
        "answer_kept": answer_kept,
        "reasoning_wrong": reasoning_wrong,
    }


def test_hand_computed_example() -> None:
    records = [
        rec(True, True, True, True),  # success
        rec(True, True, True, True),  # success
        rec(True, True, True, False),  # unsuccessful
        rec(True, True, True, None),  # the judge abstained: counted apart, in no rate
        rec(True, True, False, None),  # answer flipped
        rec(True, True, False, True),  # answer flipped (a reasoning verdict does not matter then)
        rec(False, False),
        rec(False, False),
        rec(False, False),
        rec(False, False),
    ]
    m = matcha_metrics(records)
    assert (m["n"], m["n_correct"], m["acc"], m["n_attacked"]) == (10, 6, 0.6, 6)
    # Over the 5 with a verdict (issue 26: an abstention was counted as unsuccessful before).
    assert m["n_rated"] == 5 and m["n_unjudged"] == 1
    assert m["sr"] == 2 / 5 and m["ur"] == 1 / 5 and m["wr"] == pytest.approx(2 / 5, abs=1e-15)
    assert m["ur"] + m["sr"] + m["wr"] == 1.0
    assert m["counts"] == {"unsuccessful": 1, "success": 2, "wrong": 2, "unjudged": 1}
    assert m["unjudged_reasons"] == {"the judge gave no verdict": 1} and m["exclusions"]["unjudged"] == 1
    assert m["ci95"]["acc"] == wilson_interval(6, 10)
    assert m["ci95"]["ur"] == wilson_interval(1, 5)
    for key in ("sr", "wr"):
        assert m["ci95"][key] == wilson_interval(2, 5)
    lo, hi = m["ci95"]["sr"]
    assert lo < 2 / 5 < hi


def test_paper_sized_numbers() -> None:
    # 1000 questions, 161 clean-correct and attacked: 63 unsuccessful, 24 successes, 74 flipped.
    records = (
        [rec(True, True, True, False)] * 63
        + [rec(True, True, True, True)] * 24
        + [rec(True, True, False)] * 74
        + [rec(False, False)] * 839
    )
    m = matcha_metrics(records)
    assert m["acc"] == 0.161
    assert m["ur"] == 63 / 161 and m["sr"] == 24 / 161
    assert m["ur"] + m["sr"] + m["wr"] == 1.0
    assert m["wr"] == pytest.approx(74 / 161, rel=1e-12)


def test_no_attacked_examples() -> None:
    m = matcha_metrics([rec(False, False), rec(False, False)])
    assert (m["n"], m["n_correct"], m["acc"], m["n_attacked"]) == (2, 0, 0.0, 0)
    assert m["ur"] is None and m["sr"] is None and m["wr"] is None
    assert m["ci95"]["ur"] is None and m["ci95"]["acc"] == wilson_interval(0, 2)
    assert m["counts"] == {"unsuccessful": 0, "success": 0, "wrong": 0, "unjudged": 0}


def test_empty_run() -> None:
    m = matcha_metrics([])
    assert m["n"] == 0 and m["acc"] is None and m["sr"] is None and m["ci95"]["acc"] is None


def test_clean_target_attacks_incorrect_examples_too() -> None:
    # --target-answer clean: an example the model got wrong is still attacked (to keep its own answer).
    m = matcha_metrics([rec(False, True, True, True), rec(True, True, False)])
    assert m["acc"] == 0.5 and m["n_attacked"] == 2 and m["sr"] == 0.5 and m["wr"] == 0.5


def test_records_may_be_objects() -> None:
    @dataclass
    class Row:
        clean_correct: bool
        attacked: bool
        answer_kept: bool
        reasoning_wrong: bool | None

    m = matcha_metrics([Row(True, True, True, True), Row(True, True, True, False)])
    assert m["sr"] == 0.5 and m["ur"] == 0.5 and m["wr"] == 0.0
    assert outcome(Row(True, False, True, True)) is None


@settings(max_examples=300, deadline=None)
@given(u=st.integers(0, 500), s=st.integers(0, 500), w=st.integers(0, 500), p=st.integers(0, 50))
def test_rates_sum_to_exactly_one(u: int, s: int, w: int, p: int) -> None:
    records = (
        [rec(True, True, True, False)] * u
        + [rec(True, True, True, None)] * min(p, u)
        + [rec(True, True, True, True)] * s
        + [rec(True, True, False)] * w
    )
    r = outcome_rates(records)
    attacked = u + min(p, u) + s + w
    rated = u + s + w  # abstentions are in no rate
    assert r["n_attacked"] == attacked and r["n_rated"] == rated
    if rated == 0:
        assert r["ur"] is None
        return
    assert r["ur"] + r["sr"] + r["wr"] == 1.0
    assert sum([r["ur"], r["sr"], r["wr"]]) == 1.0
    assert r["wr"] == pytest.approx(w / rated, abs=1e-15)
    assert r["counts"]["success"] == s and r["n_unjudged"] == min(p, u)


def test_transfer_rate_counts_only_questions_the_model_gets_right_originally() -> None:
    records = [
        {"original_correct": True, "answer_kept": True, "reasoning_wrong": True},  # success
        {"original_correct": True, "answer_kept": True, "reasoning_wrong": False},
        {"original_correct": True, "answer_kept": False, "reasoning_wrong": None},
        {"original_correct": True, "answer_kept": True, "reasoning_wrong": True},  # success
        {"original_correct": False, "answer_kept": True, "reasoning_wrong": True},  # excluded
    ]
    t = transfer_metrics(records)
    assert (t["n_transferred"], t["n_original_correct"], t["n_success"]) == (5, 4, 2)
    assert t["transfer_rate"] == 0.5 and t["sr"] == 0.5 and t["ur"] == 0.25
    assert t["ur"] + t["sr"] + t["wr"] == 1.0
    assert t["transfer_rate_ci95"] == wilson_interval(2, 4)


def test_transfer_with_nothing_eligible() -> None:
    t = transfer_metrics([{"original_correct": False, "answer_kept": True, "reasoning_wrong": True}])
    assert t["transfer_rate"] is None and t["transfer_rate_ci95"] is None and t["n_transferred"] == 1


def test_what_was_left_out_is_counted_by_reason() -> None:
    records = [
        {**rec(True, True, True, False), "clean_cot_wrong": True},  # attacked, but outside n_rated
        {**rec(True, True, True, False), "clean_cot_wrong": True},
        rec(True, True, True, True),
        {**rec(False, False), "skip_reason": "no answer in the clean completion"},
        {**rec(False, False), "skip_reason": "no answer in the clean completion"},
        {**rec(True, False), "skip_reason": "beyond the attack limit"},
        rec(False, False),  # a record of an older run, without a reason
    ]
    m = matcha_metrics(records)
    assert m["skip_reasons"] == {"no answer in the clean completion": 2, "beyond the attack limit": 1,
                                 "not attacked (no reason recorded)": 1}
    assert m["exclusions"] == {"unjudged": 0, "clean_cot_wrong": 2}
    assert (m["n_attacked"], m["n_rated"]) == (3, 1)
    transfer = transfer_metrics([{"original_correct": False}, {"original_correct": True, "answer_kept": True,
                                                                "reasoning_wrong": True}])
    assert transfer["exclusions"] == {"original_wrong": 1, "unjudged": 0} and transfer["n_original_correct"] == 1
