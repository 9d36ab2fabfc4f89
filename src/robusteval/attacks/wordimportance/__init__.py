"""Black-box word-importance attack on a classifier that returns only a label.

``oracle``: the goal (the true label), confidence estimators, query budget and memo. ``search``: word
ranking and the perturbation search on one example (``attack_example``). ``pipeline``: the run config, the
run over a dataset (``attack_wordimportance``) and the ``robusteval attack wordimportance`` registration.
The figures (per-rate outcomes, the summary table) are :mod:`robusteval.metrics.wordimportance`.
"""

from robusteval.attacks.wordimportance.oracle import ConfidenceMode, Judgement, default_confidence
from robusteval.attacks.wordimportance.pipeline import (
    WordImportanceRunConfig,
    attack_wordimportance,
    write_adversarial_set,
)
from robusteval.attacks.wordimportance.search import WordImportanceConfig, attack_example
from robusteval.metrics.wordimportance import attack_summary

__all__ = [
    "ConfidenceMode",
    "Judgement",
    "WordImportanceConfig",
    "WordImportanceRunConfig",
    "attack_example",
    "attack_summary",
    "attack_wordimportance",
    "default_confidence",
    "write_adversarial_set",
]
