"""The unit every dataset loader yields."""

from __future__ import annotations

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
