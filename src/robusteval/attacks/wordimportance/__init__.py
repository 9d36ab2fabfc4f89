"""Black-box word-importance attack on a classifier that returns only a label.

``oracle``: the goal (the true label), confidence estimators, query budget and memo. ``search``: word
ranking and the perturbation search on one example (``attack_example``). ``config``: the run config. ``pipeline``:
the run over a dataset (``attack_wordimportance``). ``attack``: the ``robusteval attack wordimportance``
registration. Names below load on first use, so the registration (read by ``robusteval --help``) stays light.
The figures (per-rate outcomes, the summary table) are :mod:`robusteval.metrics.wordimportance`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> module; resolved on first use.
_EXPORTS = {
    "ConfidenceMode": "robusteval.attacks.wordimportance.oracle",
    "Judgement": "robusteval.attacks.wordimportance.oracle",
    "default_confidence": "robusteval.attacks.wordimportance.oracle",
    "WordImportanceRunConfig": "robusteval.attacks.wordimportance.config",
    "attack_wordimportance": "robusteval.attacks.wordimportance.pipeline",
    "write_adversarial_set": "robusteval.attacks.wordimportance.pipeline",
    "WordImportanceConfig": "robusteval.attacks.wordimportance.search",
    "attack_example": "robusteval.attacks.wordimportance.search",
    "attack_summary": "robusteval.metrics.wordimportance",
}

if TYPE_CHECKING:
    from robusteval.attacks.wordimportance.config import WordImportanceRunConfig as WordImportanceRunConfig
    from robusteval.attacks.wordimportance.oracle import ConfidenceMode as ConfidenceMode
    from robusteval.attacks.wordimportance.oracle import Judgement as Judgement
    from robusteval.attacks.wordimportance.oracle import default_confidence as default_confidence
    from robusteval.attacks.wordimportance.pipeline import attack_wordimportance as attack_wordimportance
    from robusteval.attacks.wordimportance.pipeline import write_adversarial_set as write_adversarial_set
    from robusteval.attacks.wordimportance.search import WordImportanceConfig as WordImportanceConfig
    from robusteval.attacks.wordimportance.search import attack_example as attack_example
    from robusteval.metrics.wordimportance import attack_summary as attack_summary

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
