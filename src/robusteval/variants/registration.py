"""VAR-MATH's (``variants eval``) entry in the method registry (light: names its parts, imports none of them)."""

from robusteval.methods import MethodSpec, register_method

register_method(MethodSpec(
    name="variants", command="variants eval",
    summary="VAR-MATH: symbolic variants of math problems, strict and loose scores, diagnosis",
    section="varmath", runner="robusteval.variants.study_method:method", results="robusteval.variants.results:RESULTS",
    cli="robusteval.cli.variants", stages=("robusteval.variants.pipeline",),
    headlines=(("strict", "higher"), ("loose", "higher")), order=30))
