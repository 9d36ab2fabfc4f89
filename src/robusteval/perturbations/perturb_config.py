"""The ``perturb`` command's config (``robusteval perturb``, :func:`robusteval.perturbations.pipeline.
perturb_dataset`), apart from the pipeline so that building the command's options loads no pipeline and no numpy."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import field_check, nested, option, validated
from robusteval.data.spec import DataSpec
from robusteval.perturbations.registry import check_method_name
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.seeding import DEFAULT_SEED


@validated
@dataclass(frozen=True)
class PerturbConfig:
    """``robusteval perturb``: one method over the text fields of every example."""

    data: DataSpec = nested()
    #: Language, protections and change budget; default: the method's own settings.
    perturbation: PerturbationSpec = nested(default_factory=PerturbationSpec)
    method: str = option(metavar="METHOD", help="the perturbation method")
    seed: int = option(DEFAULT_SEED, help="random seed (per example and field)")
    # Part of the settings' fingerprint: a file written without the cosine is rewritten when it is asked for.
    drift_embedding: bool = option(False, help="also record each line's drift as the cosine of all-MiniLM-L6-v2 "
                                   "sentence embeddings (needs the drift extra; loads torch)")


    def __post_init__(self) -> None:
        with field_check(self, "method"):
            check_method_name(self.method)
        self.perturbation.check_similarity_methods(self, [self.method])
