"""Perturbed benchmarks and the RB-index (``robusteval robustness``, ``rv.robustness``): the pipeline
(:mod:`.pipeline`), labelled preservation (:mod:`.preservation`), its study method (:mod:`.study`), its results
(:mod:`.results`) and its registration (:mod:`.registration`).

The pipeline's names are read from here as before, imported on first use, so reading the method registry
(``robusteval --help``) loads no pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

if TYPE_CHECKING:
    from robusteval.evals.robustness.config import RobustnessConfig, SetSpec, parse_sets
    from robusteval.evals.robustness.pipeline import (
        CLASSIFY_STAGE,
        COMMAND,
        OUTCOME_STAGE,
        RobustnessSummary,
        build_summary,
        perturbed_sets,
        robustness,
        robustness_identity,
        robustness_info,
        set_drift,
        set_similarity,
        store_outcomes,
        with_preservation,
    )

__all__ = [
    "CLASSIFY_STAGE", "COMMAND", "OUTCOME_STAGE", "RobustnessConfig", "RobustnessSummary", "SetSpec",
    "build_summary", "parse_sets", "perturbed_sets", "robustness", "robustness_identity", "robustness_info",
    "set_drift", "set_similarity", "store_outcomes", "with_preservation",
]


#: The pipeline's names, imported on first use (the registration beside it stays light); the config's from its own
#: module (building the command's options loads no pipeline).
__getattr__ = lazy_exports(__name__, dict.fromkeys(("RobustnessConfig", "SetSpec", "parse_sets"),
                                                   "robusteval.evals.robustness.config"),
                           rest="robusteval.evals.robustness.pipeline")
