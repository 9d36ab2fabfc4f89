"""Perturbed benchmarks as a study method (its registration's ``runner``)."""

from __future__ import annotations

from robusteval.evals.robustness import RobustnessConfig, robustness, robustness_identity, robustness_info
from robusteval.studies.methods import Method


def method() -> Method:
    return Method("robustness", RobustnessConfig, "label", robustness_identity,
                  lambda c, b, s, load, bs: robustness(c, b, s, load_model=load, batch_size=bs),
                  (("rb_index", "lower"), ("acc[original]", "higher")), run_info=robustness_info,
                  named_paths=("sets",))
