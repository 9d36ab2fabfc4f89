"""`runs compare --format latex` ready for a paper (issue 28 item 7): a \\label per table, internal keys only in
% comments, --rename OLD=NEW, a study's model names by default, --digits N."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.reportstores import matcha_store
from helpers.runs import cli_inproc
from robusteval.errors import UserError
from robusteval.report.latex import compare_latex, parse_renames

KEPT = ["unsuccessful"] * 30 + ["success"] * 6 + ["wrong"] * 4
HALF = ["unsuccessful"] * 20 + ["success"] * 12 + ["wrong"] * 8


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study directory as `robusteval study` leaves it: study.json and <study>/<model>/<method>/<dataset> runs
    whose model folders are both called "model" (so their readable names are the folder's parent)."""
    root = tmp_path_factory.mktemp("latex") / "study"
    cells = []
    for name, kinds, spec, seed in (
        ("tiny-random", KEPT, "hf:/cache/a1/model", 1),
        ("bars-tiny", HALF, "hf:/cache/b2/model", 2),
    ):
        cell = f"{name}/matcha/math"
        matcha_store(root / cell, 40, kinds=kinds, model_name=spec, seed=seed)
        cells.append({"cell": cell, "run_dir": str(root / cell), "status": "done", "error": "", "log": ""})
    (root / "study.json").write_text(
        json.dumps({"study": "s.toml", "title": "t", "models": ["tiny-random", "bars-tiny"], "cells": cells}),
        encoding="utf-8",
    )
    return root


def _captions(latex: str) -> list[str]:
    return re.findall(r"\\caption\{(.*)\}", latex)


def test_tables_have_labels_and_keys_only_in_comments(study: Path) -> None:
    latex = compare_latex([study])
    labels = re.findall(r"\\label\{(tab:[a-z0-9-]+)\}", latex)
    assert labels and len(labels) == len(set(labels)) == len(re.findall(r"\\begin\{table\*?\}", latex))
    assert labels[0] == "tab:matcha-token-level-attack-on-synthetic"
    for caption in _captions(latex):
        assert "omparability key" not in caption and "layout" not in caption, caption
    comments = [line for line in latex.splitlines() if line.startswith("%")]
    assert any(re.fullmatch(r"% comparability key [0-9a-f]{12}", line) for line in comments)
    assert "% paper Table 1 layout" in comments
    # Every comment line is a comment: no line break inside one lets text through.
    assert all(not line.startswith(("comparability", "apart")) for line in latex.splitlines())


def test_a_study_exports_with_its_model_names_and_rename_wins(study: Path) -> None:
    latex = compare_latex([study])
    rows = [line for line in latex.split("end{table", 1)[0].splitlines() if line.endswith(r"\\") and "scriptsize" in line]
    assert sorted(row.split(" & ")[0] for row in rows) == ["bars-tiny", "tiny-random"]
    assert "a1/model" not in latex.split("\n", 2)[2]  # only the "models renamed" comment names the folder
    renamed = compare_latex([study], rename={"bars-tiny": "Bars (tiny)", "a1/model": "TinyRandom_1"})
    rows = [line.split(" & ")[0] for line in renamed.split("end{table", 1)[0].splitlines() if line.endswith(r"\\") and "scriptsize" in line]
    assert sorted(rows) == ["Bars (tiny)", r"TinyRandom\_1"]


def test_runs_without_a_study_keep_their_readable_names(study: Path) -> None:
    runs = [study / "tiny-random/matcha/math", study / "bars-tiny/matcha/math"]
    rows = [
        line.split(" & ")[0]
        for line in compare_latex(runs).split("end{table", 1)[0].splitlines()
        if line.endswith(r"\\") and "scriptsize" in line
    ]
    assert sorted(rows) == ["a1/model", "b2/model"]


def test_digits(study: Path) -> None:
    assert r"& 40 & 75.0 {\scriptsize[59.8, 85.8]} &" in compare_latex([study])
    assert r"75.00 {\scriptsize[59.81, 85.81]}" in compare_latex([study], digits=2)
    assert r"75 {\scriptsize[60, 86]}" in compare_latex([study], digits=0)


def test_cli_flags_and_bad_values_are_one_line(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.tex"
    done = cli_inproc(
        "runs",
        "compare",
        str(study),
        "--format",
        "latex",
        "--output",
        str(out),
        "--digits",
        "2",
        "--rename",
        "tiny-random=TR",
        "--rename",
        "bars-tiny=BT",
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert r"TR & 40 & 100.00 {\scriptsize[91.24, 100.00]}" in text and r"BT & 40" in text
    for flags, message in (
        (["--rename", "tiny-random"], "--rename 'tiny-random': expected OLD=NEW"),
        (["--digits", "9"], "--digits 9: give a whole number from 0 to 6"),
    ):
        bad = cli_inproc("runs", "compare", str(study), "--format", "latex", *flags)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    table = cli_inproc("runs", "compare", str(study), "--digits", "2")
    assert table.returncode == 2 and "--digits is for --format latex" in table.stderr
    tex = tmp_path / "p.tex"  # the pairwise tests as LaTeX take --rename and --digits too
    pairs = cli_inproc("runs", "compare", str(study), "--pairwise", str(tex), "--rename", "tiny-random=TR")
    assert pairs.returncode == 0, pairs.stderr
    assert "TR" in tex.read_text(encoding="utf-8")


def test_the_study_state_file_is_the_studies_own() -> None:
    from robusteval.report.latex import STUDY_STATE
    from robusteval.studies.study import STATE_NAME

    assert STUDY_STATE == STATE_NAME


def test_parse_renames() -> None:
    assert parse_renames(["a=b", " x = y z "]) == {"a": "b", "x": "y z"}
    with pytest.raises(UserError, match="expected OLD=NEW"):
        parse_renames(["=b"])
