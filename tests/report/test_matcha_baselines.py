"""Table 3 (baselines beside MATCHA): runs that differ only by seed are averaged, a setting most runs share is
left out of the row names, and many runs take linear time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from robusteval.attacks.matcha.results import section as report_matcha
from robusteval.attacks.matcha.results.section import _settings as settings
from robusteval.attacks.matcha.results.section import baselines_table
from robusteval.report.model import Table
from robusteval.runs import Run


def _run(i: int, variant: str, steps: int, ur: float) -> Run:
    summary = {"model": "m", "dataset": "gsm8k", "level": "token", "variant": variant, "n": 30, "n_rated": 10,
               "ur": ur, "sr": 1 - ur, "seeds": {"seed": i},
               "hyperparameters": {"seed": i, "variant": variant, "steps": steps, "insert_ratio": 0.2}}
    return Run(Path(f"runs/{variant}-{steps}-{i}"), {}, {}, summary, {})


def test_repeats_are_averaged_and_only_differing_settings_named() -> None:
    runs = [_run(i, "full", 3, 0.5) for i in range(3)] + [_run(i, "random-insert", 3, 0.25 * i) for i in range(3)]
    runs.append(_run(0, "random-insert", 5, 0.9))
    table = baselines_table(runs)
    assert isinstance(table, Table)
    assert [row[0] for row in table.rows] == ["Random insertion", "Random insertion (steps=5)", "MATCHA"]
    mean = table.rows[0][1]
    assert mean.value == 0.25 and mean.std is not None and "3 run(s), seeds 0, 1, 2" in mean.note


def test_many_settings_take_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 runs at 1,000 settings (a fine grid): each run's settings are read once, and the most common one
    counted once, not by comparing every setting with every run (quadratic: millions of reads, over 10 s)."""
    runs = [_run(0, variant, steps, 0.5) for steps in range(1_000) for variant in ("full", "random-insert")]
    reads = [0]

    def counted(run: Run) -> Any:
        reads[0] += 1
        return settings(run)

    monkeypatch.setattr(report_matcha, "_settings", counted)
    table = baselines_table(runs)
    assert isinstance(table, Table) and len(table.rows) == 2_000
    assert reads[0] <= 2 * len(runs)
