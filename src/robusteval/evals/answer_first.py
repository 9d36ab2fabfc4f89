"""Answer-first accuracy: the clean pass that every MATCHA attack starts from, and ``robusteval eval``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robusteval.data.answers import answers_match, extract_answer_first, split_answer_and_cot
from robusteval.data.example import Example
from robusteval.metrics.stats import proportion
from robusteval.models import Backend, GenerationRequest
from robusteval.prompts.answer_first import STOP_STRINGS, AnswerFirstPrompt
from robusteval.runner import run_units
from robusteval.store import RunStore, unit_key

STAGE = "answer_first"


def read_completion(completion: str, answer_type: str) -> dict[str, Any]:
    """The answer, the answer sentence and the chain of thought of an answer-first completion."""
    answer_sentence, cot = split_answer_and_cot(completion)
    return {
        "predicted": extract_answer_first(completion, answer_type),
        "answer_sentence": answer_sentence,
        "cot": cot,
    }


def grade_completion(example: Example, completion: str) -> dict[str, Any]:
    """:func:`read_completion` plus ``correct`` against the gold answer."""
    read = read_completion(completion, example.answer_type)
    return {**read, "correct": answers_match(read["predicted"], example.answer, example.answer_type)}


def answer_first_records(
    backend: Backend,
    store: RunStore,
    examples: Sequence[Example],
    prompt: AnswerFirstPrompt,
    *,
    max_new_tokens: int = 256,
    batch_size: int = 8,
    description: str = "answer-first",
) -> list[dict[str, Any]]:
    """Greedy answer-first completions for every example, stored per example (resumable)."""
    prefix = prompt.prefix

    def key_of(example: Example) -> str:
        return unit_key(STAGE, backend.name, example.id, example.question, prefix, max_new_tokens)

    def compute(batch: list[Example]) -> list[dict[str, Any]]:
        requests = [
            GenerationRequest(prompt.question_prompt(ex.question), max_new_tokens, stop=STOP_STRINGS, prefix=prefix)
            for ex in batch
        ]
        outputs = backend.generate(requests)
        return [
            {
                "id": ex.id,
                "question": ex.question,
                "gold": ex.answer,
                "answer_type": ex.answer_type,
                "completion": out.text,
                "finish_reason": out.finish_reason,
                "n_tokens": out.n_tokens,
                **grade_completion(ex, out.text),
            }
            for ex, out in zip(batch, outputs, strict=True)
        ]

    return run_units(
        store, STAGE, examples, key_of, compute, id_of=lambda ex: ex.id, batch_size=batch_size, description=description
    )


def accuracy_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n_correct = sum(1 for r in records if r["correct"])
    acc = proportion(n_correct, len(records))
    return {"n": len(records), "n_correct": n_correct, "acc": acc["value"], "acc_ci95": acc["ci95"]}
