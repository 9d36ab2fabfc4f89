"""Robustness to the prompt: the instruction, system turn, answer-format line or few-shot exemplars perturbed by
every perturbation robusteval has, the questions left as they are (issue 39, item 1; docs/prompt-robustness.md).

One concern per module: ``surfaces`` (a classification prompt taken apart into its surfaces and put back),
``config`` (``PromptRobustnessConfig``), ``generate`` (k perturbed prompts per method, stored units), ``pdr``
(PromptBench's PDR and the RB-index with paired intervals), ``pipeline`` (``prompt_robustness``); item 2, the adversarial prompt search: ``search`` (the word-importance
oracle's view of a candidate instruction, the split) and ``search_pipeline`` (``prompt_search``); item 3, the
prompt spread: ``formats`` (FormatSpread's grammar, prompts from a file), ``spread`` (min/max/mean/spread and
the worst case per example) and ``spread_pipeline`` (``prompt_spread``).
"""

from robusteval.evals.prompt_robustness.config import (
    PromptRobustnessConfig,
    PromptSearchConfig,
    PromptSpreadConfig,
)
from robusteval.evals.prompt_robustness.pipeline import prompt_robustness
from robusteval.evals.prompt_robustness.search_pipeline import prompt_search
from robusteval.evals.prompt_robustness.spread_pipeline import prompt_spread

__all__ = ["PromptRobustnessConfig", "PromptSearchConfig", "PromptSpreadConfig", "prompt_robustness",
           "prompt_search", "prompt_spread"]
