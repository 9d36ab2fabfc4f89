"""Reading finished (or partial) runs back: ``robusteval.load_run(dir)``.

Never writes: a run on read-only media, or one another process is still writing, reads fine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.config import did_you_mean
from robusteval.errors import DataError, UserError
from robusteval.store import SUMMARY_NAME, RunStore, file_sha256

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Run:
    """A run directory's identity, info (environment, limits), summary and stored units."""

    path: Path
    identity: dict[str, Any]
    info: dict[str, Any]
    summary: dict[str, Any] | None
    stages: dict[str, int]

    @property
    def command(self) -> str | None:
        return self.identity.get("command")

    def units(self, stage: str | None = None) -> list[dict[str, Any]]:
        """Every stored unit (stage, key, example_id, seconds, created, record), in commit order."""
        if stage is not None:
            self._check_stage(stage)
        with RunStore.open_existing(self.path) as store:
            return list(store.iter_units(stage))

    def records(self, stage: str) -> list[dict[str, Any]]:
        """The records of one stage (``runs show`` lists the stages), in commit order. A stage this run has
        no unit of is refused with a suggestion (a misspelt name must not read as an empty stage)."""
        self._check_stage(stage)
        with RunStore.open_existing(self.path) as store:
            return store.records(stage)

    def _check_stage(self, stage: str) -> None:
        if not isinstance(stage, str):
            raise UserError(f"{self.path}: a stage is named by a string, got {type(stage).__name__} {stage!r}")
        from robusteval.store.stages import STAGES

        # A stage robusteval writes but this run holds no unit of yet (nothing attacked) reads as empty; only a
        # name no run could hold is refused.
        if stage not in self.stages and stage not in STAGES.names():
            stored = ", ".join(self.stages) or "none yet"
            raise UserError(f"{self.path}: no stage {stage!r} in this run{did_you_mean(stage, self.stages)}; its "
                            f"stages: {stored}")

    def overview(self) -> dict[str, Any]:
        """What a reader wants first: which model in which numeric setting, made with what, and the seeds."""
        model = self.identity.get("model")
        described = model if isinstance(model, dict) else {}
        environment = self.info.get("environment") or {}
        return {
            "command": self.command,
            "model": (described.get("source") or described.get("model")) if described else model,
            "dtype": described.get("dtype"),
            "device": described.get("device"),
            "weights_sha256": described.get("weights_sha256"),
            "versions": {k: environment.get(k) for k in ("robusteval", "python", "torch", "transformers")
                         if environment.get(k)},
            "gpu": environment.get("gpu"),
            "git_revision": environment.get("git_revision"),
            "seeds": (self.summary or {}).get("seeds") or {k: self.identity[k] for k in ("seed",)
                                                             if k in self.identity},
        }

    def find_file(self, stored: str | os.PathLike[str], sha256: str | None = None) -> Path | None:
        """A file the run recorded by path (its instances, its data), where it is now, or None.

        A relative path was recorded relative to the working directory of the command that made the run, a
        directory at or above the run directory when the run was named by a relative path: it is tried against
        the run directory and each directory above it before the current directory, so a run read from
        elsewhere (or a copy of one) finds its own file. With ``sha256`` (the identity's hash of that file) a
        file whose content differs is not taken for it."""
        named = Path(stored)
        candidates = [named]
        if not named.is_absolute():
            here = self.path.resolve()
            candidates = [base / named for base in (here, *here.parents)] + candidates
        for candidate in candidates:
            if candidate.is_file() and (sha256 is None or file_sha256(candidate) == sha256):
                return candidate
        return None

    def to_dataframe(self, stage: str) -> pd.DataFrame:
        """The records of ``stage`` as a pandas DataFrame (nested values stay Python objects)."""
        try:
            import pandas as pd
        except ImportError:
            raise UserError("Run.to_dataframe needs pandas: pip install pandas") from None
        return pd.DataFrame.from_records(self.records(stage))


def load_run(path: str | os.PathLike[str]) -> Run:
    """Open a run directory read-only and return what it holds; a damaged store is a one-line UserError."""
    if not isinstance(path, str | os.PathLike):
        raise UserError(f"load_run(): expected a run directory (a str or Path), got {type(path).__name__} {path!r}")
    with RunStore.open_existing(path) as store:
        summary = store.get_meta("summary")
        if summary is None and (Path(path) / SUMMARY_NAME).is_file():
            summary = _read_summary(Path(path) / SUMMARY_NAME)
        return Run(Path(path), store.identity, store.get_meta("info") or {}, summary, store.stages())


def _read_summary(path: Path) -> dict[str, Any]:
    """summary.json beside the store; invalid JSON, or JSON that is not an object, is a one-line DataError."""
    from robusteval.data.loaders.files import read_json

    summary = read_json(path)
    if not isinstance(summary, dict):
        raise DataError(path, "expected a JSON object (a run summary)")
    return summary
