"""The method's registration (entry point ``robusteval.methods``): data and references only, so it is light."""

from robusteval.methods import MethodSpec, register_method

register_method(MethodSpec(
    name="first-word", command="first-word", summary="is the first word of the reply the gold label?",
    section="first-word", runner="robusteval_demo_plugin.method:runner",
    results="robusteval_demo_plugin.results:RESULTS", cli="robusteval_demo_plugin.cli",
    stages=("robusteval_demo_plugin.method",), headlines=(("acc", "higher"),), order=90))
