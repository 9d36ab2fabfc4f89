"""The answer-first eval (``robusteval eval``, ``rv.evaluate``): the pipeline (:mod:`.pipeline`), its study method
(:mod:`.study_method`), its results (:mod:`.results`) and its registration (:mod:`.registration`).

The pipeline's names are read from here as before, imported on first use, so reading the method registry
(``robusteval --help``) loads no pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

if TYPE_CHECKING:
    from robusteval.data.answers.completion import grade_completion, read_completion
    from robusteval.evals.answer_first.config import EvalConfig
    from robusteval.evals.answer_first.pipeline import (
        COMMAND,
        STAGE,
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


#: The pipeline's names, imported on first use (the registration beside it stays light); the two that moved to
#: ``data.answers.completion`` are still read here by callers from before; the config from its own module.
__getattr__ = lazy_exports(__name__, {**dict.fromkeys(("grade_completion", "read_completion"),
                                                      "robusteval.data.answers.completion"),
                                      "EvalConfig": "robusteval.evals.answer_first.config"},
                           rest="robusteval.evals.answer_first.pipeline")
