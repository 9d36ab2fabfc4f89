"""`variants eval` stops generation where the model starts a next question, as `eval` does (issue 28 item 3).

The tiny trained model was trained on chained answer-first blocks, so after its answer it writes a blank line and a
made-up "Q: ... A: The answer is N" of its own. Read without a stop, the answer comes from that made-up question.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.data.answers import extract_final_answer
from robusteval.models import GenerationRequest, load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import STOP_STRINGS
from robusteval.text.thinking import NO_THINKING, ReasoningFormat, ReasoningOptions
from robusteval.variants.configs import VariantsEvalConfig
from robusteval.variants.pipeline import MATH_PROMPT, evaluate_variants, stop_strings

QUESTIONS = {
    "add": "What is 2 + 3?",
    "mia": "Mia has 4 red pencils and 3 blue pencils. How many pencils does she have?",
    "tom": "Tom has 5 apples and eats 2. How many are left?",
    "cones": "A coach sets out 28 cones in 4 equal rows. How many cones are in each row?",
    "shelf": "A shelf holds 15 books. How many books?",
}
MAX_NEW_TOKENS = 160


def _cut(text: str) -> str:
    hits = [i for stop in STOP_STRINGS if (i := text.find(stop)) >= 0]
    return text[: min(hits)] if hits else text


def test_variants_eval_reads_the_answer_before_a_made_up_next_question(
    tiny_trained_dir: Path, tmp_path: Path
) -> None:
    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    # What the model writes when nothing stops it.
    free = backend.generate(
        [
            GenerationRequest(MATH_PROMPT.format(question=q), max_new_tokens=MAX_NEW_TOKENS)
            for q in QUESTIONS.values()
        ]
    )
    gold = {}
    for iid, out in zip(QUESTIONS, free, strict=True):
        own, whole = extract_final_answer(_cut(out.text)), extract_final_answer(out.text)
        if own is not None and own != whole and "\nQ:" in out.text:
            gold[iid] = own  # the answer to the asked question differs from the one read off the made-up one
    assert gold, "the tiny model no longer runs on into a next question: the test would prove nothing"
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        "".join(
            json.dumps({"id": iid, "question": QUESTIONS[iid], "answer": answer}) + "\n"
            for iid, answer in gold.items()
        ),
        encoding="utf-8",
    )
    summary = evaluate_variants(
        VariantsEvalConfig(str(instances), generation=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS)),
        backend, tmp_path / "run"
    )
    assert summary["stop"] == list(STOP_STRINGS)
    predictions = [
        json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    ]
    assert predictions and all("\nQ:" not in p["prediction"] for p in predictions)
    graded = [json.loads(line) for line in (tmp_path / "run" / "graded.jsonl").read_text().splitlines()]
    assert {row["id"]: row["correct"] for row in graded} == dict.fromkeys(gold, True)
    assert summary["loose"] == 1.0


@pytest.mark.parametrize(
    ("reasoning", "options", "stops"),
    [
        (NO_THINKING, None, STOP_STRINGS),
        # A trace in the same generation may hold a "\nQ:" line: no stop there; budget forcing generates the reply
        # apart, and the stops apply to it.
        (ReasoningFormat("think-tags", "<think>", "</think>"), ReasoningOptions(), ()),
        (
            ReasoningFormat("think-tags", "<think>", "</think>"),
            ReasoningOptions(max_thinking_tokens=64),
            STOP_STRINGS,
        ),
    ],
)
def test_stop_strings_follow_where_the_reply_is(
    reasoning: ReasoningFormat, options: ReasoningOptions | None, stops: tuple[str, ...]
) -> None:
    assert stop_strings(reasoning, options) == stops
