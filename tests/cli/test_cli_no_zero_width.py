"""No interval of zero width from a finite sample, on any surface (issue 28, item 2): the quick start's four parts
(MATCHA, VAR-MATH with its originals and diagnosis, perturbed sets and the RB-index, a hard-label attack) and ORS
run through the command line on a tiny model; every interval in every summary.json / ors.json, in the
`runs compare` CSV and in everything printed must have low < high."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.datafiles import write_ocnli
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone

#: ``[0.125, 0.290]`` or ``[95% CI 12.5, 29.0]`` as printed (the value's scale does not matter here).
PRINTED_INTERVAL = re.compile(
    r"\[(?:95% CI )?(-?\d+(?:\.\d+)?(?:e-?\d+)?) ?%?, (-?\d+(?:\.\d+)?(?:e-?\d+)?) ?%?\]"
)


def intervals_in(value: Any, path: str = "") -> Iterator[tuple[str, list[float]]]:
    """Every (where, [low, high]) under a key naming a 95% interval (``ci95``, ``acc_ci95``, ``ci95.ur`` ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if "ci95" in str(key) and not str(key).endswith("_method"):
                yield from _pairs(item, where)
            else:
                yield from intervals_in(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from intervals_in(item, f"{path}[{i}]")


def _pairs(value: Any, where: str) -> Iterator[tuple[str, list[float]]]:
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        yield where, [float(v) for v in value]
    elif isinstance(value, dict):  # ``ci95: {ur: [...], sr: [...]}`` or ``ci95: {model: [...]}``
        for key, item in value.items():
            yield from _pairs(item, f"{where}.{key}")


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

    checked = 0
    for file in [*out.rglob("summary.json"), tmp_path / "ors" / "ors.json"]:
        for where, (low, high) in intervals_in(json.loads(file.read_text("utf-8"))):
            assert low < high, f"{file}{where}: [{low}, {high}]"
            checked += 1
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

    rows = list(csv.DictReader(io.StringIO(csv_file.read_text("utf-8"))))
    lows = [name for name in (rows[0] if rows else {}) if name.endswith("_ci_low")]
    assert rows and lows, "the compare CSV has no interval columns to check"
    for row in rows:
        for low_name in lows:
            high_name = low_name.removesuffix("_ci_low") + "_ci_high"
            if row.get(low_name) not in (None, "") and row.get(high_name) not in (None, ""):
                assert float(row[low_name]) < float(row[high_name]), (row, low_name)
                checked += 1

    shown = PRINTED_INTERVAL.findall(printed)
    assert shown, printed
    for low, high in shown:
        assert float(low) < float(high), f"printed [{low}, {high}]"
    assert checked + len(shown) > 40
