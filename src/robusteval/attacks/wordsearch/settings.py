"""The word-importance search's settings, declared once (issue 38): whether the words are ranked first (the
hard-label attack's run config and the adversarial prompt search's config inherit it), the search's defaults (the
attack's run config and the search's own record, ``search.WordImportanceConfig``, read them) and the checks of their
values, run by both in their own words. Light to import (a command's ``--help`` reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from robusteval.config import ConfigError, check_at_least, option

#: The perturbation rates alpha (the run reports each; the search runs at the largest).
RATES = (0.05, 0.1, 0.2, 0.3)
#: Queries per example, the ranking's included.
BUDGET = 500
#: Answers sampled per text by the ``sample`` confidence estimator, and their temperature.
N_SAMPLES = 5
SAMPLE_TEMPERATURE = 0.7


class SearchValues(Protocol):
    """What :func:`check_search_values` reads (besides the budget, n_samples and max_drift it checks by name)."""

    @property
    def rates(self) -> tuple[float, ...]: ...

    @property
    def confidence(self) -> str: ...


def check_search_values(config: SearchValues) -> None:
    """Refuse search settings no run can take (``config`` has rates, budget, confidence, n_samples and
    max_drift), named as ``config``'s fields."""
    rates = config.rates
    if not rates or any(not 0 < r <= 1 for r in rates):
        raise ConfigError(config, "rates", f"every rate must be in (0, 1], got {list(rates)}")
    check_at_least(config, "budget", 1, optional=False)
    if config.confidence == "sample":
        check_at_least(config, "n_samples", 1, optional=False)
    check_at_least(config, "max_drift", 0)


@dataclass(frozen=True, kw_only=True)
class RankSettings:
    """Rank the words by importance before the perturbation search (False: the baseline, words in text order
    and no ranking queries)."""

    rank: bool = option(True, negate="--no-rank",
                        help="baseline: perturb words in text order without the ranking stage")
