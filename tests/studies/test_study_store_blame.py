"""A cell whose run directory holds a store the study cannot use (another program's SQLite file, a damaged one) is
refused before any model loads, and the line names that store, not the study file: the file changed nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import robusteval as rv
from helpers.studies import MATH, write_study
from robusteval.store import DB_NAME

BODY = f"""
[datasets.math]
dataset = "jsonl"
data_file = "{MATH}"
limit = 2

[methods.eval]
max_new_tokens = 4
"""


def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE songs (title TEXT)")


def _damaged(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)


@pytest.mark.parametrize("plant", [_foreign, _damaged], ids=["foreign", "damaged"])
def test_an_unusable_cell_store_is_named_and_the_study_file_is_not_blamed(
        tiny_llama_dir: Path, tmp_path: Path, plant: object) -> None:
    study_file = write_study(tmp_path / "study.toml", [tiny_llama_dir], BODY)
    plan = rv.load_study(study_file)
    cell = tmp_path / "study" / plan.models[0].name / "eval" / "math"
    cell.mkdir(parents=True)
    plant(cell / DB_NAME)  # type: ignore[operator]
    with pytest.raises(rv.UserError) as info:
        rv.study(study_file)
    line = str(info.value)
    assert "\n" not in line
    assert line.startswith(f"cell {plan.models[0].name}/eval/math: its run store cannot be used: "), line
    assert str(cell) in line and "study file changed" not in line and str(study_file) not in line, line
    assert [p.name for p in cell.iterdir()] == [DB_NAME]  # nothing was written beside it
