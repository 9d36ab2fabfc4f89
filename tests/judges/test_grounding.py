"""The ``grounding`` judge: one hand-written case per rule that flags (the offending quantity and sentence
asserted), and the harmless changes it must let through: paraphrase, unit change, reordered steps,
self-correction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.errors import UserError
from robusteval.judges import (
    AllMustPass,
    GroundingJudge,
    MajorityVote,
    ReasoningItem,
    build_judge,
    check_grounding,
)
from robusteval.judges.audit import LabelledItem
from robusteval.judges.grounding import quantities, question_values

APPLES = "Tom has 3 apples. He buys 5 more apples. Each apple costs $2. How many apples does he have?"
APPLES_REF = "The answer is 8. Tom starts with 3 apples and buys 5 more, so 3 + 5 = 8."
EATS = "Tom has 3 apples, buys 5 more and then eats 2. How many apples are left?"
EATS_REF = "The answer is 6. He has 3 + 5 = 8 apples. After eating 2, 8 - 2 = 6 apples are left."


def issues(question: str, reference: str, candidate: str) -> list[tuple[str, str | None, str]]:
    return [(i["category"], i["quantity"], i["span"]) for i in check_grounding(question, reference, candidate)]


# ------------------------------------------------------------------------------------------------ flags
def test_an_ungrounded_number_that_feeds_the_chain_is_wrong_information() -> None:
    candidate = "The answer is 8. Tom has 3 apples. His friend gives him 9 apples and he buys 5, so 3 + 5 = 8."
    assert issues(APPLES, APPLES_REF, candidate) == [
        ("wrong information", "9", "His friend gives him 9 apples and he buys 5, so 3 + 5 = 8.")]


def test_a_question_fact_restated_with_another_question_number_is_contradicted() -> None:
    found = check_grounding(APPLES, APPLES_REF, "The answer is 8. Tom has 2 apples. He buys 5 more: 3 + 5 = 8.")
    assert [(i["category"], i["quantity"], i["span"]) for i in found] == [
        ("wrong information", "2", "Tom has 2 apples.")]
    assert found[0]["reason"] == "2 replaces the question's 3"


def test_a_misstated_question_fact_is_wrong_information_even_where_it_leads_nowhere() -> None:
    found = check_grounding(APPLES, APPLES_REF, "The answer is 8. Tom has 4 apples. He buys 5 more: 3 + 5 = 8.")
    assert [(i["category"], i["quantity"], i["reason"]) for i in found] == [
        ("wrong information", "4", "4 replaces the question's 3")]


def test_a_question_number_the_solution_needs_and_the_chain_never_uses_is_dropped() -> None:
    candidate = "The answer is 6. Tom has 3 apples and buys 5 more, so 3 + 5 = 8 apples. He ends with 6 apples."
    found = check_grounding(EATS, EATS_REF, candidate)
    assert [(i["category"], i["quantity"]) for i in found] == [("wrong information", "2")]
    assert found[0]["span"] == "Tom has 3 apples, buys 5 more and then eats 2." and "never used" in found[0]["reason"]


def test_a_step_on_an_unrelated_quantity_that_leads_nowhere_is_irrelevant_information() -> None:
    candidate = "The answer is 8. Tom has 3 apples. The shop is 12 minutes away. He buys 5 more: 3 + 5 = 8."
    assert issues(APPLES, APPLES_REF, candidate) == [
        ("irrelevant information", "12", "The shop is 12 minutes away.")]


def test_a_computation_no_step_uses_and_the_solution_never_needs_is_irrelevant_information() -> None:
    candidate = "The answer is 8. The apples he buys cost 5 * 2 = 10 dollars. Tom has 3 apples and buys 5: 3 + 5 = 8."
    assert issues(APPLES, APPLES_REF, candidate) == [
        ("irrelevant information", "10", "The apples he buys cost 5 * 2 = 10 dollars.")]


def test_a_step_that_only_restates_an_unneeded_question_number_is_irrelevant() -> None:
    candidate = "The answer is 8. Each apple costs $2. Tom has 3 apples and buys 5 more, so 3 + 5 = 8."
    assert issues(APPLES, APPLES_REF, candidate) == [
        ("irrelevant information", "$2", "Each apple costs $2.")]


# ------------------------------------------------------------------------------------------------ stays correct
@pytest.mark.parametrize("candidate", [
    "The answer is 8. He begins with three apples; after buying five more he holds 3 + 5 = 8.",  # paraphrase
    "The answer is 8. He buys 5 apples, and he already had 3, so he has 5 + 3 = 8.",  # reordered
    "The answer is 8. Tom has 3 apples and buys 5 more, so he has 3 + 5 = 9. Wait, 3 + 5 should be 8, "
    "not 9, so he has 8 apples.",  # self-correction
    "The answer is 8. Starting from 3 apples, buying 5 more gives him 8 apples.",  # prose derivation
])
def test_harmless_rewordings_of_the_apples_solution_are_grounded(candidate: str) -> None:
    assert check_grounding(APPLES, APPLES_REF, candidate) == []


def test_steps_in_another_order_are_grounded() -> None:
    candidate = "The answer is 6. He ends with 8 - 2 = 6 apples, since before eating he had 3 + 5 = 8."
    assert check_grounding(EATS, EATS_REF, candidate) == []


@pytest.mark.parametrize(("question", "candidate"), [
    ("A film lasts 2 hours. How many minutes is that?", "2 hours is 120 minutes."),
    ("A film lasts 2 hours and 30 minutes. How long is it in hours?", "30 minutes is 0.5 hours, so 2 + 0.5 = 2.5."),
    ("A rope is 3 metres long. How many centimetres is that?", "It is 300 centimetres."),
    ("A class has 30 students and 40% walk. How many walk?", "40% = 2/5, and 2/5 * 30 = 12."),
])
def test_unit_and_notation_changes_are_grounded_without_a_reference(question: str, candidate: str) -> None:
    assert check_grounding(question, "", candidate) == []


def test_a_retracted_number_is_ignored_but_an_unretracted_one_is_not() -> None:
    retracted = "The answer is 8. Tom has 3 apples and 9 pears. Actually, he has no pears. He buys 5: 3 + 5 = 8."
    assert check_grounding(APPLES, APPLES_REF, retracted) == []
    kept = "The answer is 8. Tom has 3 apples and 9 pears. He buys 5: 3 + 5 = 8."
    assert [(i["category"], i["quantity"]) for i in check_grounding(APPLES, APPLES_REF, kept)] == [
        ("irrelevant information", "9")]


def test_question_values_read_digits_words_fractions_percentages_and_multipliers() -> None:
    values = question_values("Twice a week she gives three friends 3/4 of a pizza and 20% of $1,200.")
    assert {2, 3, 4, 20, 1200} <= values and {0.75, 0.2} <= {float(v) for v in values}


def test_spelled_out_numbers_are_read_whole_as_the_answer_grader_reads_them() -> None:
    question = "A farm has one hundred and five cows. It sells 7 cows. How many cows are left?"
    assert 105 in question_values(question) and 5 not in question_values(question)
    candidate = "The answer is 98. The farm has 105 cows and sells 7, so 105 - 7 = 98 cows are left."
    assert check_grounding(question, "", candidate) == []
    read = [(q.text, q.values) for q in quantities("twenty minus seven, negative four and a hundred and one")]
    # A signed number keeps its sign first and its size as well ("minus" may be the operation).
    assert read == [("twenty", (20,)), ("minus seven", (-7, 7)), ("negative four", (-4, 4)),
                    ("a hundred and one", (101,))]


# ------------------------------------------------------------------------------------------------ the judge
def test_the_judge_names_the_first_issue_and_keeps_them_all() -> None:
    item = ReasoningItem(APPLES, APPLES_REF, "The answer is 8. Tom has 2 apples. His friend gives 9 more: 3 + 5 = 8.")
    verdict = GroundingJudge().judge([item])[0]
    assert verdict.label is False and verdict.judge == "grounding"
    assert verdict.detail["method"] == "grounding"
    assert (verdict.detail["category"], verdict.detail["quantity"]) == ("wrong information", "2")
    assert [i["quantity"] for i in verdict.detail["issues"]] == ["2", "9"]
    assert "wrong information: 2 in 'Tom has 2 apples.'" in verdict.raw
    ok = GroundingJudge().judge([ReasoningItem(APPLES, APPLES_REF, APPLES_REF)])[0]
    assert ok.label is True and ok.detail["issues"] == [] and ok.detail["category"] is None


def test_the_judge_abstains_with_nothing_to_ground() -> None:
    judge = GroundingJudge()
    # No question numbers and a chain without a number: nothing to ground, no issue.
    empty = ReasoningItem("Can birds fly?", "The answer is yes. Most birds can fly.", "The answer is yes. Birds fly.")
    # The question's numbers used by the reference but none in the chain: a dropped quantity is still a verdict.
    dropped = ReasoningItem(APPLES, APPLES_REF, "The answer is 8. He adds what he buys to what he has.")
    v_empty, v_dropped = judge.judge([empty, dropped])
    assert v_empty.label is None and v_empty.abstain_reason == "nothing to ground"
    assert v_empty.detail["issues"] == [] and v_empty.raw == "0 quantities in the chain: abstains"
    assert v_dropped.label is False and v_dropped.detail["category"] == "wrong information"
    assert GroundingJudge.identity["version"] == 2


def test_grounding_is_registered_alone_combined_and_in_votes() -> None:
    def no_models(spec: str):  # type: ignore[no-untyped-def]
        raise AssertionError(f"no model should load for {spec}")

    assert isinstance(build_judge("grounding", no_models), GroundingJudge)
    both = build_judge("arith+grounding", no_models)
    assert isinstance(both, AllMustPass) and [m.name for m in both.members] == ["arith", "grounding"]
    vote = build_judge("vote:arith,grounding,arith", no_models)
    assert isinstance(vote, MajorityVote) and vote.name == "vote(arith,grounding,arith)"
    wrong = ReasoningItem(APPLES, APPLES_REF, "The answer is 8. His friend gives him 9 apples, so 3 + 5 = 8.")
    assert [v.label for v in both.judge([wrong, ReasoningItem(APPLES, APPLES_REF, APPLES_REF)])] == [False, True]
    with pytest.raises(UserError, match="grounding' checks reasoning only"):
        build_judge("grounding", no_models, task="semantic")


# ------------------------------------------------------------------------------------------------ recorded issues
GOLDEN = Path(__file__).with_name("grounding_golden.json")
LABELLED = Path(__file__).parents[1] / "data" / "judge_audit.jsonl"


def test_the_issues_on_the_labelled_set_and_on_long_chains_are_those_recorded() -> None:
    """Every issue of every labelled item and of seeded synthetic chains of 10, 40 and 120 sentences
    (bench/judges_bench.py's generator), recorded before the judge's lookups were made fast: speed-ups must
    not change a verdict."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    labelled = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(labelled) == len(golden["labelled"]) == 96
    for record in labelled:
        item = LabelledItem(record["id"], record["question"], record["reference_cot"], record["perturbed_cot"],
                            record["label"], record.get("category"), record.get("answer")).reasoning_item()
        assert check_grounding(item.question, item.reference, item.candidate) == golden["labelled"][record["id"]], \
            record["id"]
    assert {c["sentences"] for c in golden["synthetic"]} == {10, 40, 120}
    for chain in golden["synthetic"]:
        found = check_grounding(chain["question"], chain["reference"], chain["candidate"])
        assert found == chain["issues"], (chain["sentences"], chain["seed"])
