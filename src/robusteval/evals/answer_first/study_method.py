"""The answer-first eval as a study method (its registration's ``runner``)."""

from __future__ import annotations

from robusteval.evals.answer_first import EvalConfig, eval_identity, evaluate
from robusteval.studies.methods import Method


def method() -> Method:
    return Method("eval", EvalConfig, "qa", eval_identity,
                  lambda c, b, s, load, bs: evaluate(c, b, s, batch_size=bs), (("acc", "higher"),))
