"""Black-box word-importance attack on a classifier that returns only a label.

The search (:mod:`robusteval.attacks.wordsearch`, shared with the adversarial prompt search): ``oracle``, the goal
(the true label), confidence estimators, query budget and memo; ``search``, word ranking and the perturbation
search on one example (``attack_example``). ``config``: the run config. ``pipeline``:
the run over a dataset (``attack_wordimportance``). ``attack``: the ``robusteval attack wordimportance``
registration. Names below load on first use, so the registration (read by ``robusteval --help``) stays light.
The figures (per-rate outcomes, the summary table) are :mod:`robusteval.metrics.wordimportance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

#: public name -> module; resolved on first use.
_EXPORTS = {
    "ConfidenceMode": "robusteval.attacks.wordsearch.oracle",
    "Judgement": "robusteval.attacks.wordsearch.oracle",
    "default_confidence": "robusteval.attacks.wordsearch.oracle",
    "WordImportanceRunConfig": "robusteval.attacks.wordimportance.config",
    "attack_wordimportance": "robusteval.attacks.wordimportance.pipeline",
    "write_adversarial_set": "robusteval.attacks.wordimportance.pipeline",
    "WordImportanceConfig": "robusteval.attacks.wordsearch.search",
    "attack_example": "robusteval.attacks.wordsearch.search",
    "attack_summary": "robusteval.metrics.wordimportance",
}

if TYPE_CHECKING:
    from robusteval.attacks.wordimportance.config import WordImportanceRunConfig as WordImportanceRunConfig
    from robusteval.attacks.wordimportance.pipeline import attack_wordimportance as attack_wordimportance
    from robusteval.attacks.wordimportance.pipeline import write_adversarial_set as write_adversarial_set
    from robusteval.attacks.wordsearch.oracle import ConfidenceMode as ConfidenceMode
    from robusteval.attacks.wordsearch.oracle import Judgement as Judgement
    from robusteval.attacks.wordsearch.oracle import default_confidence as default_confidence
    from robusteval.attacks.wordsearch.search import WordImportanceConfig as WordImportanceConfig
    from robusteval.attacks.wordsearch.search import attack_example as attack_example
    from robusteval.metrics.wordimportance import attack_summary as attack_summary

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
