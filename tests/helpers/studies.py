"""Study files for the study tests: the models' entries, then the datasets and methods given."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLES = resources.files("robusteval.data") / "samples"
MATH, YESNO = str(SAMPLES / "math.jsonl"), str(SAMPLES / "yesno.jsonl")


def write_study(path: Path, models: list[Path | str], body: str, *, head: str = "") -> Path:
    """``path`` holding ``head``, one ``[[models]]`` entry per model folder (on the CPU), then ``body``."""
    entries = "".join(f'[[models]]\nspec = "hf:{m}"\ndevice = "cpu"\n\n' for m in models)
    path.write_text(head + entries + body, encoding="utf-8")
    return path
