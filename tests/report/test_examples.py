"""The worked example the quick-start prints: edit spans from a real tokenizer, marks, verdict reasons."""

from __future__ import annotations

from robusteval.attacks.matcha.results.terminal import format_matcha_example, marked_question, pick_example
from robusteval.attacks.matcha.token import edit_spans


def test_edit_spans_cover_exactly_the_inserted_tokens(tiny_backend) -> None:  # type: ignore[no-untyped-def]
    question = tiny_backend.encode(" Tom has 3 apples and buys 4 more. How many apples does he have?")
    inserted_tokens = tiny_backend.encode(" purple") + tiny_backend.encode(" quickly")
    ids = question[:3] + inserted_tokens[:1] + question[3:7] + inserted_tokens[1:2] + question[7:]
    positions = [3, 8]
    text = tiny_backend.decode(ids).strip()
    spans = edit_spans(tiny_backend.decode, ids, positions, replaced=[8])
    assert [s["kind"] for s in spans] == ["inserted", "replaced"]
    for span, position in zip(spans, positions, strict=True):
        word = tiny_backend.decode(ids[position : position + 1]).strip()
        assert text[span["start"] : span["end"]] == word and span["token_id"] == ids[position]
    # Removing the marked spans gives back the original question (up to the spaces the tokens carried).
    kept = text
    for span in reversed(spans):
        kept = kept[: span["start"]] + kept[span["end"] :]
    assert kept.split() == tiny_backend.decode(question).split()


def test_marked_question_and_format() -> None:
    text = "Tom has purple 3 apples quickly."
    edits = [{"start": 8, "end": 14, "kind": "inserted"}, {"start": 24, "end": 31, "kind": "replaced"}]
    assert marked_question(text, edits) == "Tom has [+purple] 3 apples [*quickly]."
    record = {
        "id": "q1", "attacked": True, "answer_kept": True, "outcome": "success", "clean_question": "Tom has 3 apples.",
        "perturbed_question": text, "edits": edits, "clean_answer": "7", "gold": "7", "target": "7",
        "clean_completion": "The answer is 7. 3 + 4 = 7.", "perturbed_answer": "7",
        "perturbed_cot": "3 + 4 = 8, so 7.",
        "reasoning": {"judge": "arith", "label": False, "raw": "1 equation(s) checked, 1 false",
                      "detail": {"false_equations": [{"text": "3 + 4 = 8"}]}},
        "steps": [{"loss": {"total": 1.5}}],
    }
    shown = format_matcha_example(record, success=True, where=" (math question q1)")
    assert "an attack that succeeded" in shown and "[+purple]" in shown and "[*quickly]" in shown
    assert "SR: answer kept, reasoning judged wrong; arith: false equation 3 + 4 = 8" in shown
    assert "3 + 4 = 7." in shown  # the clean reasoning
    assert "error type" not in shown  # a record without one (runs made before error types) shows none
    record["error_type"] = {"category": "wrong calculation", "judge": "arith", "raw": "", "detail": {}}
    shown = format_matcha_example(record, success=True)
    assert "error type          wrong calculation (decided by arith)" in shown


def test_pick_prefers_a_success_then_the_highest_loss_kept_answer() -> None:
    def record(ident: str, outcome: str, kept: bool, loss: float) -> dict:
        return {"id": ident, "attacked": True, "outcome": outcome, "answer_kept": kept,
                "steps": [{"loss": {"total": loss}}]}

    pool = [record("a", "unsuccessful", True, 0.5), record("b", "wrong", False, 9.0),
            record("c", "unsuccessful", True, 0.9)]
    assert pick_example(pool) == (pool[2], False)  # the answer-kept case closest to success
    pool.append(record("d", "success", True, 0.1))
    assert pick_example(pool) == (pool[3], True)
    assert pick_example([{"id": "x", "attacked": False}]) == (None, False)

