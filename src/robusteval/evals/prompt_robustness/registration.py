"""Prompt robustness's three registrations, one per mode of ``robusteval prompt-robustness`` (light: read by
``robusteval --help``; it imports only :mod:`robusteval.methods`).

* ``prompt-robustness`` (``--mode perturb``): accuracy with the clean prompt and with perturbed copies of one of
  its surfaces; headlines: the RB-index over the perturbed prompts (PromptBench's PDR of the whole set, lower is
  more robust) and the clean prompt's accuracy;
* ``prompt-search`` (``--mode search``): the adversarial instruction found under a query budget; headlines: the
  held-out accuracy under the found prompt and its drop from the clean prompt's on the same examples;
* ``prompt-spread`` (``--mode spread``): accuracy over equivalent prompts and formats; headlines: the worst case
  per example (every prompt right) and the spread (max - min).

The commands are the pipelines' ``COMMAND`` constants (tests/evals/test_prompt_robustness_registry.py holds them
equal); all three share the command line module, the report section and the ``classify`` stage of
:mod:`robusteval.evals.classification`.
"""

from __future__ import annotations

from robusteval.methods import MethodSpec, register_method

_PACKAGE = "robusteval.evals.prompt_robustness"
_CLI = "robusteval.cli.prompt_robustness"
#: The report section that shows the three modes' runs.
SECTION = "prompt-robustness"

register_method(MethodSpec(
    name="prompt-robustness",
    command="prompt-robustness",
    summary="accuracy under perturbed prompts (instruction, system, format line, exemplars): PDR and RB-index",
    section=SECTION,
    runner=f"{_PACKAGE}.study_method:perturb",
    results=f"{_PACKAGE}.results:PERTURB",
    cli=_CLI,
    stages=(f"{_PACKAGE}.generate",),
    headlines=(("pdr", "lower"), ("acc[clean]", "higher")),
    order=60,
))

register_method(MethodSpec(
    name="prompt-search",
    command="prompt-robustness search",
    summary="adversarial instruction under a query budget, scored on held-out examples",
    section=SECTION,
    runner=f"{_PACKAGE}.study_method:search",
    results=f"{_PACKAGE}.results:SEARCH",
    cli=_CLI,
    stages=(f"{_PACKAGE}.search",),
    headlines=(("acc[found]", "higher"), ("drop", "lower")),
    order=61,
))

register_method(MethodSpec(
    name="prompt-spread",
    command="prompt-robustness spread",
    summary="accuracy over equivalent prompts and formats: min, max, spread and the worst case per example",
    section=SECTION,
    runner=f"{_PACKAGE}.study_method:spread",
    results=f"{_PACKAGE}.results:SPREAD",
    cli=_CLI,
    headlines=(("worst_case", "higher"), ("spread", "lower")),
    order=62,
))
