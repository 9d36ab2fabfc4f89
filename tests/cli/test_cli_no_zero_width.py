"""No interval of zero width from a finite sample, on any surface (issue 28, item 2): the quick start's four parts
(MATCHA, VAR-MATH with its originals and diagnosis, perturbed sets and the RB-index, a hard-label attack) and ORS
run through the command line on a tiny model; every interval in every summary.json / ors.json, in the
`runs compare` CSV and LaTeX and in everything printed must have low < high."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.intervals import check_csv, check_json_files, check_printed
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone


def run(*args: str | Path) -> None:
    assert main([str(arg) for arg in args]) == 0, args


def test_no_surface_shows_a_zero_width_interval(
    tiny_trained_dir: Path,
    tiny_nli_dir: Path,
    tiny_llama_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "quickstart"
    model = f"hf:{tiny_trained_dir}"
    run("quickstart", "--model", model, "--attack-limit", "2", "--max-new-tokens", "24", "--out", out)
    # The tiny math model answers no yes/no question right (no RB-index, nothing to attack): the classifier the
    # tests train gives the perturbed-set and hard-label parts numbers, among them the case (a
    # back-translated set that changed nothing) and an ORS.
    data = write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(10, seed=5))
    template = tiny_nli_dir / "template.json"
    nli = ["--model", f"hf:{tiny_nli_dir}", "--template", template, "--dataset", "ocnli", "--data-file", data]
    sets = "C-homophone,S-backtranslation"
    translator = f"hf:{tiny_llama_dir}"
    run(
        "robustness",
        *nli,
        "--sets",
        sets,
        "--translator",
        translator,
        "--changed-only",
        "--out",
        out / "nli-rb",
    )
    run(
        "attack",
        "wordimportance",
        *nli,
        "--method",
        "C-homophone",
        "--rates",
        "0.1,0.3",
        "--out",
        out / "nli-wi",
    )
    ors = tmp_path / "ors"
    run("ors", out / "nli-wi", "--out", ors, "--bootstrap", "300")
    run("runs", "compare", out, ors, "--format", "table")
    csv_file = tmp_path / "compare.csv"
    run("runs", "compare", out, ors, "--format", "csv", "--output", csv_file)
    tex_file = tmp_path / "tables.tex"
    run("runs", "compare", out, ors, "--format", "latex", "--output", tex_file)
    for name in (
        "matcha",
        "variants/run",
        "variants/original",
        "robustness",
        "wordimportance",
        "nli-rb",
        "nli-wi",
    ):
        run("runs", "show", out / name)
    printed = capsys.readouterr().out

    checked = check_json_files([*out.rglob("summary.json"), tmp_path / "ors" / "ors.json"])
    # The cases that used to collapse are among them: the RB-index and each set's drop, VAR-MATH's drops and its
    # originals' accuracy, ORS.
    robustness = json.loads((out / "nli-rb" / "summary.json").read_text("utf-8"))
    assert robustness["rb_index"] is not None and robustness["rb_index_ci95"] is not None
    assert robustness["sets_excluded"] == ["S-backtranslation"]
    assert all(entry["drop_ci95"] is not None for entry in robustness["sets"].values())
    diagnosis = json.loads((out / "variants" / "run" / "summary.json").read_text("utf-8"))["diagnosis"][
        "drop"
    ]
    assert diagnosis["n"] == 3 and diagnosis["original_ci95"] is not None
    assert diagnosis["absolute"]["strict"]["ci95"] is not None
    assert json.loads((tmp_path / "ors" / "ors.json").read_text("utf-8"))["ci95"]

    checked += check_csv(csv_file.read_text("utf-8"))
    checked += check_printed(printed)
    checked += check_printed(tex_file.read_text("utf-8"))
    assert checked > 40
