"""MATCHA metrics against hand-computed numbers: every attacked example in the denominator (no judge decision
shrinks it), in exactly one category, the categories' rates summing to 1."""

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
        rec(True, True, True, None),  # the judge abstained: a category of its own, in the denominator
        rec(True, True, False, None),  # answer flipped
        rec(True, True, False, True),  # answer flipped (a reasoning verdict does not matter then)
        rec(False, False),
        rec(False, False),
        rec(False, False),
        rec(False, False),
    ]
    m = matcha_metrics(records)
    assert (m["n"], m["n_correct"], m["acc"], m["n_attacked"]) == (10, 6, 0.6, 6)
    # Over all 6 attacked (issue 34: the abstention is its own category, never dropped from the denominator).
    assert m["rates_over"] == "n_attacked" and "n_rated" not in m and m["n_unjudged"] == 1
    assert m["sr"] == 2 / 6 and m["ur"] == 1 / 6 and m["unjudged_rate"] == 1 / 6 and m["clean_cot_wrong_rate"] == 0
    assert m["wr"] == pytest.approx(2 / 6, abs=1e-15)
    assert sum(m[k] for k in ("ur", "sr", "wr", "unjudged_rate", "clean_cot_wrong_rate")) == pytest.approx(1.0)
    assert m["counts"] == {"unsuccessful": 1, "success": 2, "wrong": 2, "unjudged": 1, "clean_cot_wrong": 0}
    assert sum(m["counts"].values()) == m["n_attacked"]
    assert m["unjudged_reasons"] == {"the judge gave no verdict": 1} and m["exclusions"]["unjudged"] == 1
    assert m["ci95"]["acc"] == wilson_interval(6, 10)
    assert m["ci95"]["ur"] == wilson_interval(1, 6) and m["ci95"]["unjudged_rate"] == wilson_interval(1, 6)
    for key in ("sr", "wr"):
        assert m["ci95"][key] == wilson_interval(2, 6)
    lo, hi = m["ci95"]["sr"]
    assert lo < 2 / 6 < hi
    # The rates among the judged answers stay, as a labelled secondary view over the 5 with a verdict.
    judged = m["among_judged"]
    assert (judged["n"], judged["sr"], judged["ur"]) == (5, 2 / 5, 1 / 5) and "judge" in judged["definition"]
    assert judged["ci95"]["sr"] == wilson_interval(2, 5)


def test_unjudged_kept_answers_do_not_inflate_wr() -> None:
    # Issue 34's case: 20 attacked, 14 answers changed, 6 kept but unjudged. WR is 14/20, not 14/14.
    records = [rec(True, True, False)] * 14 + [rec(True, True, True, None)] * 6
    for counting in ("ours", "authors"):
        m = matcha_metrics(records, counting)
        assert m["n_attacked"] == 20 and m["wr"] == pytest.approx(0.7) and m["unjudged_rate"] == pytest.approx(0.3)
        assert m["ci95"]["wr"] == wilson_interval(14, 20) and m["ci95"]["wr"][0] < 0.7 < m["ci95"]["wr"][1]
        assert (m["counts"]["wrong"], m["counts"]["unjudged"]) == (14, 6) and sum(m["counts"].values()) == 20
        assert m["among_judged"]["n"] == 14 and m["among_judged"]["wr"] == 1.0  # the old, inflated view
    authors = matcha_metrics(records, "authors")["denominators"]
    for name in ("authors", "ours"):
        assert authors[name]["n"] == 20 and authors[name]["wr"] == pytest.approx(0.7)
        assert sum(authors[name]["counts"].values()) == 20


def test_a_changed_answer_is_wr_whatever_the_clean_verdict() -> None:
    flipped = {**rec(True, True, False), "clean_cot_wrong": True}
    kept = {**rec(True, True, True, True), "clean_cot_wrong": True}
    assert outcome(flipped) == "wrong" and outcome(kept) == "clean_cot_wrong"
    assert outcome(kept, "authors") == "success"
    m = matcha_metrics([flipped, kept, rec(True, True, True, False)])
    assert m["n_attacked"] == 3 and m["wr"] == pytest.approx(1 / 3) and m["clean_cot_wrong_rate"] == 1 / 3
    assert m["counts"] == {"wrong": 1, "success": 0, "unsuccessful": 1, "unjudged": 0, "clean_cot_wrong": 1}
    assert m["among_judged"]["n"] == 2


def test_under_authors_counting_judge_exclusions_are_categories_of_our_denominator() -> None:
    records = [{**rec(True, True, True, True), "clean_cot_wrong": True},  # authors': success; ours: clean wrong
               {**rec(True, True, True, True), "no_cot": True},  # authors' only (no reasoning after the answer)
               rec(True, True, True, None), rec(True, True, False), rec(True, True, True, False)]
    m = matcha_metrics(records, "authors")
    assert m["headline_denominator"] == "authors" and m["n_attacked"] == 5 and m["sr"] == 2 / 5
    assert "clean_cot_wrong_rate" not in m  # the authors count those by their verdict
    ours = m["denominators"]["ours"]
    assert ours["n"] == 4 and ours["counts"] == {"wrong": 1, "success": 0, "unsuccessful": 1, "unjudged": 1,
                                                 "clean_cot_wrong": 1}
    # Why ours is 4 of 5: named and explained (issue 35 item 7).
    assert m["exclusions"] == {"unjudged": 1, "clean_cot_wrong": 1, "no_cot": 1}
    assert set(m["exclusion_definitions"]) == {"unjudged", "clean_cot_wrong", "no_cot"}


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
    assert m["counts"] == {"wrong": 0, "success": 0, "unsuccessful": 0, "unjudged": 0, "clean_cot_wrong": 0}


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
def test_categories_sum_to_the_attacked(u: int, s: int, w: int, p: int) -> None:
    records = (
        [rec(True, True, True, False)] * u
        + [rec(True, True, True, None)] * min(p, u)
        + [rec(True, True, True, True)] * s
        + [rec(True, True, False)] * w
    )
    r = outcome_rates(records)
    attacked = u + min(p, u) + s + w
    rated = u + s + w  # the secondary view leaves abstentions out
    assert r["n_attacked"] == attacked and r["among_judged"]["n"] == rated
    assert sum(r["counts"].values()) == attacked
    if attacked == 0:
        assert r["ur"] is None and r["unjudged_rate"] is None
        return
    assert r["wr"] + (r["ur"] + r["sr"] + r["unjudged_rate"] + r["clean_cot_wrong_rate"]) == 1.0
    assert r["wr"] == pytest.approx(w / attacked, abs=1e-15)
    assert r["unjudged_rate"] == min(p, u) / attacked
    assert r["counts"]["success"] == s and r["n_unjudged"] == min(p, u)
    if rated:
        judged = r["among_judged"]
        assert judged["ur"] + judged["sr"] + judged["wr"] == 1.0


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


def test_transfer_rate_keeps_unjudged_questions_in_its_denominator() -> None:
    # 10 answered correctly originally: 3 successes, 1 intact, 2 changed, 4 kept but unjudged; 1 excluded.
    records = ([{"original_correct": True, "answer_kept": True, "reasoning_wrong": True}] * 3
               + [{"original_correct": True, "answer_kept": True, "reasoning_wrong": False}]
               + [{"original_correct": True, "answer_kept": False, "reasoning_wrong": None}] * 2
               + [{"original_correct": True, "answer_kept": True, "reasoning_wrong": None}] * 4
               + [{"original_correct": False, "answer_kept": True, "reasoning_wrong": True}])
    t = transfer_metrics(records)
    assert t["rates_over"] == "n_original_correct" and t["n_original_correct"] == 10
    assert t["transfer_rate"] == 0.3 and t["transfer_rate_ci95"] == wilson_interval(3, 10)
    assert t["unjudged_rate"] == 0.4 and t["n_unjudged"] == 4 and sum(t["counts"].values()) == 10
    assert t["among_judged"]["n"] == 6 and t["among_judged"]["sr"] == 0.5  # the secondary view


def test_transfer_with_nothing_eligible() -> None:
    t = transfer_metrics([{"original_correct": False, "answer_kept": True, "reasoning_wrong": True}])
    assert t["transfer_rate"] is None and t["transfer_rate_ci95"] is None and t["n_transferred"] == 1


def test_what_was_left_out_is_counted_by_reason() -> None:
    records = [
        {**rec(True, True, True, False), "clean_cot_wrong": True},  # attacked, a category of its own
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
    assert (m["n_attacked"], m["among_judged"]["n"], m["clean_cot_wrong_rate"]) == (3, 1, 2 / 3)
    transfer = transfer_metrics([{"original_correct": False}, {"original_correct": True, "answer_kept": True,
                                                                "reasoning_wrong": True}])
    assert transfer["exclusions"] == {"original_wrong": 1, "unjudged": 0, "clean_cot_wrong": 0}
    assert transfer["n_original_correct"] == 1
