"""The perturbed benchmarks' (RB-index) entry in the method registry (light: names its parts, imports none)."""

from robusteval.methods import MethodSpec, register_method

register_method(MethodSpec(
    name="robustness", command="robustness",
    summary="perturbed benchmarks: accuracy on perturbed copies of a classification set, RB-index",
    section="robustness", runner="robusteval.evals.robustness.study_method:method",
    results="robusteval.evals.robustness.results:RESULTS", cli="robusteval.cli.robustness",
    stages=("robusteval.evals.robustness.pipeline",), headlines=(("rb_index", "lower"), ("acc[original]", "higher")),
    order=40))
