"""Marks of the example browsers: perturbation edits on both texts, judge-flagged spans, clipped overlaps."""

from __future__ import annotations

from robusteval.perturbations.base import Edit, apply_edits
from robusteval.report.highlight import (
    find_span,
    flagged_spans,
    perturbation_marks,
    text_block,
    verdict_marks,
)


def test_perturbation_marks_follow_length_changes() -> None:
    original = "Does a spider have more legs than an ant?"
    edits = [Edit(7, 13, "spider", "arachnid"), Edit(19, 23, "more", "mo"), Edit(34, 36, "an", "one")]
    perturbed = apply_edits(original, edits)
    before, after = perturbation_marks([e.to_dict() for e in edits], "W-test")
    assert [original[s:e] for s, e, *_ in before] == ["spider", "more", "an"]
    assert [perturbed[s:e] for s, e, *_ in after] == ["arachnid", "mo", "one"]
    assert after[0][3] == "W-test: 'spider' → 'arachnid'"


def test_false_equations_and_grounding_spans_are_found_in_the_text() -> None:
    text = "The answer is 18. He buys 2 x 7 = 15 apples, then eats 5 of them."
    arith = {"judge": "arith", "label": False,
             "detail": {"method": "arithmetic", "false_equations": [{"text": "2 * 7 = 15", "left_value": "14",
                                                                    "right_value": "15"}]}}
    grounding = {"judge": "grounding", "label": False,
                 "detail": {"method": "grounding", "issues": [{"category": "wrong information", "quantity": "5",
                                                              "span": "then eats 5 of them", "reason": "ungrounded"}]}}
    combined = {"judge": "arith+grounding", "label": False, "detail": {"members": [arith, grounding]}}
    assert [why.split(":")[0] for _, why in flagged_spans(combined)] == ["arith", "grounding"]
    marks, missing = verdict_marks(text, [combined])
    assert [text[s:e] for s, e, *_ in marks] == ["2 x 7 = 15", "then eats 5 of them"] and missing == []
    assert "left side is 14" in marks[0][3]
    _, missing = verdict_marks("no such equation here", [arith])
    assert missing and "2 * 7 = 15" in missing[0]
    assert find_span("so 3×(4+1)=15", "3 * (4 + 1) = 15") == (3, 13)


def test_text_block_drops_overlaps_and_clips() -> None:
    block = text_block("abcdef", [[4, 99, "a", ""], [0, 3, "b", ""], [2, 5, "c", ""], [3, 3, "d", ""]])
    assert block == {"t": "abcdef", "m": [[0, 3, "b", ""], [4, 6, "a", ""]]}
    assert text_block(None) == {"t": ""}
