"""The setting of the word-importance search a run chooses on the command line, declared once (issue 38): whether
the words are ranked first. The hard-label attack's run config and the adversarial prompt search's config inherit
it. Light to import (a command's ``--help`` reads it)."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import option


@dataclass(frozen=True, kw_only=True)
class RankSettings:
    """Rank the words by importance before the perturbation search (False: the baseline, words in text order
    and no ranking queries)."""

    rank: bool = option(True, negate="--no-rank",
                        help="baseline: perturb words in text order without the ranking stage")
