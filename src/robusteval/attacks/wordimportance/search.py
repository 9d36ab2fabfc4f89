"""The word-importance search moved to :mod:`robusteval.attacks.wordsearch.search` (a component the adversarial
prompt search shares); this path re-exports what was imported from it."""

from __future__ import annotations

from robusteval.attacks.wordsearch.search import WordImportanceConfig, attack_example

__all__ = ["WordImportanceConfig", "attack_example"]
