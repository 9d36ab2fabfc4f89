"""Robustness to the prompt: the instruction, system turn, answer-format line or few-shot exemplars perturbed by
every perturbation robusteval has, the questions left as they are (issue 39, item 1; docs/prompt-robustness.md).

One concern per module: ``surfaces`` (a classification prompt taken apart into its surfaces and put back),
``config`` (``PromptRobustnessConfig``), ``generate`` (k perturbed prompts per method, stored units), ``pdr``
(PromptBench's PDR and the RB-index with paired intervals), ``pipeline`` (``prompt_robustness``); item 2, the adversarial prompt search: ``search`` (the word-importance
oracle's view of a candidate instruction, the split) and ``search_pipeline`` (``prompt_search``); item 3, the
prompt spread: ``formats`` (FormatSpread's grammar, prompts from a file), ``spread`` (min/max/mean/spread and
the worst case per example) and ``spread_pipeline`` (``prompt_spread``). ``registration`` registers
its three modes with the method registry (``prompt-robustness``, ``prompt-search``, ``prompt-spread``);
``study_method`` builds their study cells and ``results`` shows their runs (rates, per-example outcomes, the
``runs compare`` boards and the report section). Names below load on first use, so reading the registration
(``robusteval --help``) imports no pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

#: public name -> module; resolved on first use.
_EXPORTS = {
    "PromptRobustnessConfig": "robusteval.evals.prompt_robustness.config",
    "PromptSearchConfig": "robusteval.evals.prompt_robustness.config",
    "PromptSpreadConfig": "robusteval.evals.prompt_robustness.config",
    "prompt_robustness": "robusteval.evals.prompt_robustness.pipeline",
    "prompt_search": "robusteval.evals.prompt_robustness.search_pipeline",
    "prompt_spread": "robusteval.evals.prompt_robustness.spread_pipeline",
}

if TYPE_CHECKING:
    from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig as PromptRobustnessConfig
    from robusteval.evals.prompt_robustness.config import PromptSearchConfig as PromptSearchConfig
    from robusteval.evals.prompt_robustness.config import PromptSpreadConfig as PromptSpreadConfig
    from robusteval.evals.prompt_robustness.pipeline import prompt_robustness as prompt_robustness
    from robusteval.evals.prompt_robustness.search_pipeline import prompt_search as prompt_search
    from robusteval.evals.prompt_robustness.spread_pipeline import prompt_spread as prompt_spread

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
