"""VAR-MATH's ``variants eval`` as a study method (its registration's ``runner``)."""

from __future__ import annotations

from robusteval.studies.methods import Method
from robusteval.variants.configs import VariantsEvalConfig
from robusteval.variants.pipeline import evaluate_variants, variants_eval_identity


def method() -> Method:
    return Method("variants", VariantsEvalConfig, "instances", lambda c, model, _: variants_eval_identity(c, model),
                  lambda c, b, s, load, bs: evaluate_variants(c, b, s, batch_size=bs),
                  (("strict", "higher"), ("loose", "higher")))
