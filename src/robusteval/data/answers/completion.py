"""An answer-first completion read and graded: the answer, the answer sentence and the chain of thought, and
whether the answer is the gold one. The eval method and every attack that starts from an answer-first clean
pass (MATCHA, its transfer) read completions the same way."""

from __future__ import annotations

from typing import Any

from robusteval.data.answers.extract import extract_answer_first, split_answer_and_cot
from robusteval.data.answers.graders import grade_answer
from robusteval.data.example import Example


def read_completion(completion: str, answer_type: str) -> dict[str, Any]:
    """The answer, the answer sentence and the chain of thought of an answer-first completion."""
    answer_sentence, cot = split_answer_and_cot(completion)
    return {
        "predicted": extract_answer_first(completion, answer_type),
        "answer_sentence": answer_sentence,
        "cot": cot,
    }


def grade_completion(example: Example, completion: str, *, math_grader: str = "builtin") -> dict[str, Any]:
    """:func:`read_completion` plus ``correct`` against the gold answer and the ``grader`` that decided it
    (``math_grader`` judges number and math answers; see :func:`robusteval.data.answers.grade_answer`)."""
    read = read_completion(completion, example.answer_type)
    verdict = grade_answer(read["predicted"], example.answer, example.answer_type, grader=math_grader)
    return {**read, "correct": verdict.correct, **verdict.detail()}
