"""MATCHA and its transfer in the method registry (light: imports nothing but the registry)."""

from __future__ import annotations

from robusteval.methods import MethodSpec, register_method

RESULTS = "robusteval.attacks.matcha.results"

register_method(MethodSpec(
    name="matcha", command="attack matcha",
    summary="MATCHA: perturbations that keep a model's answer while breaking its chain of thought",
    section="matcha", runner="robusteval.attacks.matcha.study_method:study_method", results=f"{RESULTS}:RESULTS",
    # WR (attacked examples whose answer the insertions changed): lower is more robust, the answer survived.
    stages=("robusteval.attacks.matcha.run", "robusteval.attacks.matcha.pipeline"),
    headlines=(("sr", "lower"), ("ur", "higher"), ("wr", "lower")), order=20,
    reference="robusteval.attacks.matcha.config_presets:presets_reference", shared_stages=("matcha_clean",),
    summary_rates=("acc", "ur", "sr", "wr")))  # metrics.matcha.MATCHA_RATES

register_method(MethodSpec(
    name="transfer", command="transfer",
    summary="MATCHA's successful perturbations replayed on another model: the transfer rate",
    section="matcha", results=f"{RESULTS}:TRANSFER_RESULTS", stages=("robusteval.attacks.matcha.transfer",),
    cli="robusteval.cli.transfer", configs=(("transfer", "robusteval.attacks.matcha.transfer:TransferConfig"),),
    order=25))
