"""The answer-first eval's entry in the method registry (light: names its parts, imports none of them)."""

from robusteval.methods import MethodSpec, register_method

register_method(MethodSpec(
    name="eval", command="eval", summary="answer-first accuracy on questions with gold answers",
    section="evals", runner="robusteval.evals.answer_first.study_method:method",
    results="robusteval.evals.answer_first.results:RESULTS", cli="robusteval.cli.eval_cmd",
    stages=("robusteval.evals.answer_first.pipeline",), headlines=(("acc", "higher"),), order=10))
