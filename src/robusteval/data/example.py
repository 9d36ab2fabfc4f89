"""The unit every dataset loader yields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

AnswerType = Literal["number", "yesno", "math", "text", "label"]


@dataclass(frozen=True)
class Example:
    """One question with its gold answer.

    ``answer`` is text: a number as written ("18", "-2.5", "3/4"), "yes"/"no", a LaTeX expression, or a
    class label. ``answer_type`` tells :mod:`robusteval.data.answers` how to extract and compare.
    """

    id: str
    question: str
    answer: str
    answer_type: AnswerType
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "answer": self.answer,
            "answer_type": self.answer_type,
            "meta": self.meta,
        }


def example_fields(example: Example) -> dict[str, str]:
    """The text fields a template may use: ``text``/``premise`` = the question, plus string meta values."""
    fields = {key: value for key, value in example.meta.items() if isinstance(value, str)}
    fields["text"] = example.question
    fields["premise"] = example.question
    return fields


def with_fields(example: Example, changed: Mapping[str, str]) -> Example:
    """A copy of ``example`` with text fields replaced (``text``/``premise`` map to the question)."""
    question = example.question
    meta = dict(example.meta)
    for key, value in changed.items():
        if key in ("text", "premise", "question"):
            question = value
        else:
            meta[key] = value
    return Example(example.id, question, example.answer, example.answer_type, meta)
