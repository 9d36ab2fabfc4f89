"""``runs export --stage``: a misspelt stage is refused in one line with the closest stage, never exported as an
empty file ("wrote 0 records")."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.reportstores import matcha_store
from helpers.runs import cli_inproc
from robusteval.runs import load_run


def test_a_misspelt_stage_is_refused_with_the_closest(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 3)
    stage = next(iter(load_run(run).stages))
    out = tmp_path / "records.jsonl"
    done = cli_inproc("runs", "export", str(run), "--stage", stage[:-1] + "x", "--output", str(out))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert f"no stage '{stage[:-1]}x' in this run (did you mean {stage}?)" in line and not out.exists()
    done = cli_inproc("runs", "export", str(run), "--stage", stage, "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert {json.loads(row)["stage"] for row in out.read_text("utf-8").splitlines()} == {stage}
