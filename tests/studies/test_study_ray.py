"""A study on a real local Ray cluster of two CPU workers stores, cell by cell, exactly what it stores in process,
and the driver never loads a model (the workers do, once each)."""

from __future__ import annotations

from pathlib import Path

import pytest

import robusteval as rv
from helpers.runs import stored_units
from helpers.shared import needs_modules
from helpers.studies import MATH, YESNO, write_study

pytestmark = [needs_modules("ray"), pytest.mark.slow]

BODY = f"""
[datasets.math]
dataset = "jsonl"
data_file = "{MATH}"
limit = 4

[datasets.yn]
dataset = "jsonl"
data_file = "{YESNO}"
answer_type = "label"
limit = 4

[methods.eval]
datasets = ["math"]
max_new_tokens = 16

[methods.robustness]
datasets = ["yn"]
sets = ["C-keyboard"]
"""


def test_study_on_ray_workers_stores_what_it_stores_in_process(
        tiny_trained_dir: Path, tiny_llama_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from robusteval.executors.ray import RayExecutor

    study_file = write_study(tmp_path / "study.toml", [tiny_trained_dir, tiny_llama_dir], BODY,
                             head="batch_size = 2\n")
    local = rv.study(study_file, tmp_path / "local")
    pool = RayExecutor(workers=2)
    try:
        remote = rv.study(study_file, tmp_path / "ray", executor=pool)
    finally:
        pool.close()
    assert not local.failed and not remote.failed
    assert "the driver needs the model itself" not in caplog.text
    for cell in local.cells:
        here, there = Path(cell.run_dir), tmp_path / "ray" / cell.cell
        assert stored_units(here) == stored_units(there), cell.cell
        assert rv.load_run(there).info["executor"]["name"] == "ray"
    assert local.leaderboard.to_dict()["cells"] == [
        {**c, "run": c["run"].replace(str(tmp_path / "ray"), str(tmp_path / "local"))}
        for c in remote.leaderboard.to_dict()["cells"]]
