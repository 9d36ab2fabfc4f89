"""The ORS command's config (``robusteval ors``, :func:`robusteval.attacks.wordimportance.ors.ors`), apart from the
computation so that building the command's options loads no numpy and no pipeline."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from robusteval.config import ConfigError, check_at_least, check_positive, option, validated
from robusteval.metrics.ors_constants import BETA_CAP, ETA_DEFAULT, MIN_ATTACKED_DEFAULT, Q_DEFAULT
from robusteval.seeding import DEFAULT_SEED


@validated
@dataclass(frozen=True)
class OrsConfig:
    """``robusteval ors``: which attack runs, the formula's constants and where to write ``ors.json``."""

    # Positional on the command line (RUN_DIR …), so the command adds it itself.
    runs: Sequence[str | os.PathLike[str]] = option(cli=False, help="attack run directories")
    q: float = option(Q_DEFAULT, help="the OAD constant q")
    eta: float = option(ETA_DEFAULT, help="the score scale eta")
    beta_cap: int = option(BETA_CAP, help="largest amplification beta")
    out: str | None = option(None, metavar="DIR", help="where to write ors.json")
    bootstrap: int = option(2000, help="bootstrap resamples of the attacked questions (all methods of a question "
                            "together) for each ORS's interval")
    bootstrap_seed: int = option(DEFAULT_SEED, help="seed of the bootstrap intervals")
    min_attacked: int = option(MIN_ATTACKED_DEFAULT, metavar="N",
                               help="warn when a run has fewer than N attacked examples (the score is then weak)")

    def __post_init__(self) -> None:
        if isinstance(self.runs, str | os.PathLike):  # one directory, not its characters
            object.__setattr__(self, "runs", (self.runs,))
        object.__setattr__(self, "runs", tuple(self.runs))
        if not self.runs:
            raise ConfigError(self, "runs", "name at least one word-importance attack run directory")
        check_positive(self, "q", optional=False)
        check_positive(self, "eta", optional=False)
        if isinstance(self.beta_cap, bool) or not isinstance(self.beta_cap, int):
            raise ConfigError(self, "beta_cap", f"must be a whole number, got {self.beta_cap!r}")
        check_at_least(self, "beta_cap", 1, optional=False)
        check_at_least(self, "bootstrap", 0, optional=False)
        check_at_least(self, "min_attacked", 1, optional=False)
