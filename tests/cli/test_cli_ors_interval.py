"""``ors`` end to end on a real word-importance attack of a tiny classifier: n (attacked examples), the bootstrap
interval over them, the warning below the minimum n, and the source cited with its office and date."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import records, summary
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone


def test_ors_has_n_an_interval_and_a_warning(
    tiny_nli_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(10, seed=7))
    run = tmp_path / "wi"
    assert (
        main(
            [
                "attack",
                "wordimportance",
                "--model",
                f"hf:{tiny_nli_dir}",
                "--template",
                str(tiny_nli_dir / "template.json"),
                "--dataset",
                "ocnli",
                "--data-file",
                str(data),
                "--limit",
                "10",
                "--method",
                "C-homophone",
                "--rates",
                "0.1,0.3",
                "--budget",
                "40",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    attacked = [r for r in records(run, "wordimportance") if r["status"] != "skipped"]
    assert attacked, "the tiny classifier should get some of the 10 pairs right"
    # The per-example matrix ORS resamples is read from the counts: they must be nested, as the records are.
    for record in attacked:
        assert record["per_rate"]["0.1"]["success"] <= record["per_rate"]["0.3"]["success"]
    capsys.readouterr()
    assert main(["ors", str(run), "--out", str(tmp_path / "ors"), "--bootstrap", "300"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "ors" / "ors.json").read_text("utf-8"))
    model = summary(run)["model"]
    assert report["n"][model] == len(attacked) == summary(run)["n_attacked"]
    low, high = report["ci95"][model]
    assert low < high and low <= report["ors"][model] <= high
    assert (
        report["source"].startswith("基于ORS面向硬标签输出深度学习模型鲁棒性评估方法")
        and "2024-09-11" in report["source"]
    )
    assert f"n={len(attacked)}" in printed
    assert re.search(
        r"warning: ORS of .* rests on few attacked examples \(C-homophone: n=\d+; fewer than 30\)", printed
    )
    assert "国知局 / CNIPA, 2024-09-11" in printed
    # --min-attacked below n: no warning.
    assert main(["ors", str(run), "--out", str(tmp_path / "ors2"), "--min-attacked", "1"]) == 0
    assert "warning:" not in capsys.readouterr().out
