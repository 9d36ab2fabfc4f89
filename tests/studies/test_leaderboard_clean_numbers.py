"""leaderboard.csv and `runs compare --format csv` hold clean numbers (issue 28 polish: leaderboard.csv
held ``2.7755575615628914e-17``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from robusteval.cli.runs import _clean_records
from robusteval.report.compare import Leaderboard
from robusteval.report.model import Num
from robusteval.studies.leaderboard import Column, StudyLeaderboard, _write

NOISE = 2.7755575615628914e-17


def test_study_leaderboard_files_hold_no_float_noise(tmp_path: Path) -> None:
    column = Column("rb:ocnli:rb_index", "rb", "ocnli", "rb_index", "lower")
    board = StudyLeaderboard(["a", "b"], [column])
    board.cells[("a", column.name)] = Num(NOISE, n=8, ci=(-0.1 - 0.2, 0.30000000000000004))
    board.cells[("b", column.name)] = Num(0.25, n=8, ci=(5.551115123125783e-17, 0.5))
    _write(board, tmp_path)
    text = (tmp_path / "leaderboard.csv").read_text(encoding="utf-8")
    assert "e-1" not in text and "0000000000" not in text
    rows = list(csv.DictReader(text.splitlines()))
    assert [
        (r["rb:ocnli:rb_index"], r["rb:ocnli:rb_index_ci_low"], r["rb:ocnli:rb_index_ci_high"]) for r in rows
    ] == [("0.0", "-0.3", "0.3"), ("0.25", "0.0", "0.5")]
    assert [r["rb:ocnli:rb_index_n"] for r in rows] == ["8", "8"]
    # leaderboard.json keeps the numbers exactly as the runs' summaries hold them (tests/studies/test_study.py).
    cells = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))["cells"]
    assert cells[0]["value"] == NOISE


def test_runs_compare_csv_records_hold_no_float_noise() -> None:
    board = Leaderboard(
        "robustness",
        "t",
        ["rank", "model", "rb_index", "note"],
        [
            {
                "rank": "1",
                "model": "m",
                "rb_index": Num(NOISE, n=8, ci=(NOISE, 0.1 + 0.2)),
                "note": "0.30000000000000004",
            }
        ],
    )
    record = _clean_records(board)[0]
    assert (record["rb_index"], record["rb_index_ci_low"], record["rb_index_ci_high"]) == (0.0, 0.0, 0.3)
    assert record["rb_index_n"] == 8 and record["note"] == "0.30000000000000004"  # text stays text
    raw = board.records()[0]
    assert raw["rb_index"] == NOISE  # the board itself keeps the stored value
