"""The settings a classification eval's summary reads, each declared once (issue 38): the label its accuracy uses
and the bootstrap of its intervals. The robustness eval and the prompt-robustness modes inherit them; none changes
a stored unit, so none is in a run identity (a run directory can be re-summarised with other values). Light to
import (no numpy): a command's ``--help`` reads them."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import check_at_least, option
from robusteval.seeding import DEFAULT_SEED

LABEL_MODES = ("hard", "soft")


@dataclass(frozen=True, kw_only=True)
class BootstrapSettings:
    """The bootstrap of a summary's intervals (resampling the questions)."""

    bootstrap: int = option(2000, identity=False,
                            help="bootstrap resamples (over questions) for the summary's intervals")
    bootstrap_seed: int = option(DEFAULT_SEED, identity=False,
                                 help="seed of the bootstrap intervals (independent of --seed)")

    def check_bootstrap(self) -> None:
        """Refuse a negative number of resamples (0: no intervals)."""
        check_at_least(self, "bootstrap", 0, optional=False)


@dataclass(frozen=True, kw_only=True)
class LabelModeSettings:
    """Which label a classifier's accuracy counts (its choices are checked by ``check_choices``)."""

    label_mode: str = option("hard", choices=LABEL_MODES, identity=False,
                             help="which label the accuracy uses: read from the generation, or argmax of label "
                             "log-probs (needs a backend that scores)")
