"""The answer-first eval (``robusteval eval``, ``rv.evaluate``): the pipeline (:mod:`.pipeline`), its study method
(:mod:`.study_method`), its results (:mod:`.results`) and its registration (:mod:`.registration`).

The pipeline's names are read from here as before, imported on first use, so reading the method registry
(``robusteval --help``) loads no pipeline."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from robusteval.data.answers.completion import grade_completion, read_completion
    from robusteval.evals.answer_first.pipeline import (
        COMMAND,
        STAGE,
        EvalConfig,
        EvalSummary,
        accuracy_summary,
        answer_first_records,
        eval_identity,
        evaluate,
    )

__all__ = [
    "COMMAND",
    "STAGE",
    "EvalConfig",
    "EvalSummary",
    "accuracy_summary",
    "answer_first_records",
    "eval_identity",
    "evaluate",
    "grade_completion",
    "read_completion",
]


def __getattr__(name: str) -> Any:
    """The pipeline's ``name``, imported on first use (the registration beside it stays light)."""
    if name.startswith("__"):
        raise AttributeError(name)
    if name in ("grade_completion", "read_completion"):  # kept here for callers from before they moved to data
        return getattr(importlib.import_module("robusteval.data.answers.completion"), name)
    return getattr(importlib.import_module("robusteval.evals.answer_first.pipeline"), name)
