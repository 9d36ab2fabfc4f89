"""No interval of zero width on a study's surfaces (issue 28, item 2): a 2-model study of perturbed sets (one of
them a back-translation that changes nothing), a hard-label attack and ORS, run through `robusteval study`;
every interval in the cells' summaries, ors.json, leaderboard.json, leaderboard.csv and the printed leaderboard
has low < high."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.intervals import check_csv, check_json_files, check_printed
from helpers.shared import needs_modules
from helpers.studies import write_study
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone

BODY = """
[datasets.ocnli]
dataset = "ocnli"
data_file = "dev.json"
template = "template.json"

[methods.robustness]
sets = ["C-homophone", "S-backtranslation"]
translator = "hf:{translator}"

[methods.wi]
kind = "wordimportance"
method = "C-homophone"
rates = [0.1, 0.3]
budget = 20
seed = 3
"""


def test_a_study_shows_no_zero_width_interval(
    tiny_nli_dir: Path, tiny_llama_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(tiny_nli_dir, tmp_path / "nli-copy")
    write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(8, seed=5))
    shutil.copy(tiny_nli_dir / "template.json", tmp_path / "template.json")
    body = BODY.replace("{translator}", str(tiny_llama_dir))
    study_file = write_study(tmp_path / "study.toml", [tiny_nli_dir, "./nli-copy"], body)
    assert main(["study", str(study_file), "--no-report"]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "study"
    summaries = list(out.rglob("summary.json"))
    assert len(summaries) == 4
    for summary_file in summaries:
        summary = json.loads(summary_file.read_text("utf-8"))
        if "rb_index" in summary:  # the back-translated set changed nothing: left out of the index
            assert summary["sets_excluded"] == ["S-backtranslation"] and summary["T"] == 1
    checked = check_json_files([*summaries, *out.rglob("ors.json"), out / "leaderboard.json"])
    checked += check_csv((out / "leaderboard.csv").read_text("utf-8"))
    checked += check_printed(printed)
    board = json.loads((out / "leaderboard.json").read_text("utf-8"))
    ors_cells = [cell for cell in board["cells"] if cell["column"].endswith(":ors")]
    assert len(ors_cells) == 2 and all(cell["n"] and cell["ci95"] for cell in ors_cells)
    assert checked > 20
