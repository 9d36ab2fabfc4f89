"""Robustness to the prompt: the instruction, system turn, answer-format line or few-shot exemplars perturbed by
every perturbation robusteval has, the questions left as they are (issue 39, item 1; docs/prompt-robustness.md).

One concern per module: ``surfaces`` (a classification prompt taken apart into its surfaces and put back),
``config`` (``PromptRobustnessConfig``), ``generate`` (k perturbed prompts per method, stored units), ``pdr``
(PromptBench's PDR and the RB-index with paired intervals), ``pipeline`` (``prompt_robustness``).
"""

from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig
from robusteval.evals.prompt_robustness.pipeline import prompt_robustness

__all__ = ["PromptRobustnessConfig", "prompt_robustness"]
