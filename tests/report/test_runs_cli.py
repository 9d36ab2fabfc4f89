"""``robusteval runs export|compare`` writing to files, and refusing what it cannot do, in one line (exit 2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers.reportstores import matcha_store
from helpers.runs import cli_inproc
from robusteval.errors import DataError
from robusteval.runs import load_run


def _one_line_error(done, expected: str) -> None:  # type: ignore[no-untyped-def]
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_output_into_a_missing_directory_creates_it(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 3)
    board = tmp_path / "missing" / "deeper" / "board.csv"
    done = cli_inproc("runs", "compare", str(run), "--format", "csv", "--output", str(board))
    assert done.returncode == 0, done.stderr
    assert [row["method"] for row in csv.DictReader(board.open(encoding="utf-8"))] == ["matcha"]
    records = tmp_path / "missing-too" / "records.jsonl"
    done = cli_inproc("runs", "export", str(run), "--output", str(records))
    assert done.returncode == 0, done.stderr
    assert len([json.loads(line) for line in records.read_text("utf-8").splitlines()]) == 3


def test_an_output_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 3)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    for command in ("compare", "export"):
        _one_line_error(cli_inproc("runs", command, str(run), "--output", str(blocker / "x.csv")),
                        f"--output {blocker / 'x.csv'}: cannot write")
        _one_line_error(cli_inproc("runs", command, str(run), "--output", str(tmp_path)), "is a directory")


def test_compare_of_only_unfinished_runs_says_so(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 3, finished=False)
    done = cli_inproc("runs", "compare", str(run))
    _one_line_error(done, "runs compare: nothing to rank")
    assert "attack matcha (1 unfinished)" in done.stderr and done.stdout == ""


def test_an_invalid_summary_json_is_one_line(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 2, finished=False)  # no summary in the store: summary.json is read
    for text, expected in (("{not json", "invalid JSON"), ("[1, 2]", "expected a JSON object")):
        (run / "summary.json").write_text(text, encoding="utf-8")
        with pytest.raises(DataError, match=expected):
            load_run(run)
        _one_line_error(cli_inproc("runs", "show", str(run)), f"{run / 'summary.json'}")
    (run / "summary.json").write_text('{"model": "m"}', encoding="utf-8")
    assert load_run(run).summary == {"model": "m"}
