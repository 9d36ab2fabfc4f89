"""`runs compare`'s ORS board gives each model's n (the distinct questions its score rests on), as ors.json holds it,
in the terminal and the CSV (issue 35: the ORS table had no n column)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import robusteval as rv
from helpers.runs import cli_inproc


def test_the_ors_board_has_each_models_n_from_ors_json(nli_runs: dict[str, Path], tmp_path: Path) -> None:
    ors = json.loads((nli_runs["ors"] / "ors.json").read_text(encoding="utf-8"))
    expected = {model: str(n) for model, n in ors["n"].items()}
    assert expected and all(n.isdigit() and int(n) > 0 for n in expected.values())
    board = next(b for b in rv.compare_runs([nli_runs["ors"]]) if b.method == "ors")
    assert "n" in board.columns and board.columns.index("n") < board.columns.index("ors")
    assert sorted(str(row["n"]) for row in board.rows) == sorted(expected.values())
    out = tmp_path / "board.csv"
    assert cli_inproc("runs", "compare", str(nli_runs["ors"]), "--format", "csv", "--output", str(out)).returncode == 0
    rows = [row for row in csv.DictReader(out.open(encoding="utf-8")) if row.get("ors")]
    assert sorted(row["n"] for row in rows) == sorted(expected.values())
    shown = cli_inproc("runs", "compare", str(nli_runs["ors"]))
    assert shown.returncode == 0
    header = next(line for line in shown.stdout.splitlines() if "ORS" in line and "beta" in line)
    assert " n " in header  # the column's heading, beside beta and ORS
