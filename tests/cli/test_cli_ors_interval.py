"""``ors`` end to end on real word-importance attacks of a tiny classifier: n (the distinct questions attacked, not
once per method), the bootstrap interval over them, the labelled fallback for a run without stored records, the
warning below the minimum n, and the source cited with its office and date."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import records, summary
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone


def attack(tiny_nli_dir: Path, data: Path, out: Path, method: str, limit: int = 10) -> None:
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
                str(limit),
                "--method",
                method,
                "--rates",
                "0.1,0.3",
                "--budget",
                "40",
                "--out",
                str(out),
            ]
        )
        == 0
    )


def test_ors_has_n_an_interval_and_a_warning(
    tiny_nli_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(10, seed=7))
    run = tmp_path / "wi"
    attack(tiny_nli_dir, data, run, "C-homophone")
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


def test_n_counts_each_question_once_over_the_methods(
    tiny_nli_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(10, seed=7))
    runs = [tmp_path / "wi-homophone", tmp_path / "wi-pinyin"]
    for out, method in zip(runs, ("C-homophone", "C-pinyin"), strict=True):
        attack(tiny_nli_dir, data, out, method)
    attacked = {out: [r["id"] for r in records(out, "wordimportance") if r["status"] != "skipped"] for out in runs}
    questions = set().union(*attacked.values())
    assert all(attacked.values()), "the tiny classifier should get some of the 10 pairs right"
    capsys.readouterr()
    assert main(["ors", *map(str, runs), "--out", str(tmp_path / "ors"), "--bootstrap", "300"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "ors" / "ors.json").read_text("utf-8"))
    model = summary(runs[0])["model"]
    # The same questions attacked by two methods are n questions, not 2n.
    assert report["n"][model] == report["n_questions"][model] == len(questions)
    assert report["n_by_method"][model] == {"C-homophone": len(attacked[runs[0]]), "C-pinyin": len(attacked[runs[1]])}
    assert report["resampling"][model] == "questions" and report["fallback"][model] is None
    assert f"n={len(questions)}" in printed and "note:" not in printed
    low, high = report["ci95"][model]
    assert low < high and low <= report["ors"][model] <= high
    # A run without its store (a copied summary.json alone): the interval falls back, and says so.
    bare = tmp_path / "bare-pinyin"
    bare.mkdir()
    shutil.copy(runs[1] / "summary.json", bare / "summary.json")
    assert main(["ors", str(runs[0]), str(bare), "--out", str(tmp_path / "ors-bare"), "--bootstrap", "300"]) == 0
    printed = capsys.readouterr().out
    fallback = json.loads((tmp_path / "ors-bare" / "ors.json").read_text("utf-8"))
    assert fallback["resampling"][model] == "examples-per-run" and fallback["n_questions"][model] is None
    assert fallback["ors"][model] == pytest.approx(report["ors"][model])
    assert "C-pinyin: no stored records (results.sqlite)" in fallback["fallback"][model]
    assert re.search(r"note: ORS of .*: no question ids \(C-pinyin: no stored records", printed)
    # Records that disagree with the summary (the run redone with --limit 4 in the same directory: its store keeps
    # all 10 examples, its summary counts 4): the records cannot say which questions the summary counts.
    attack(tiny_nli_dir, data, runs[1], "C-pinyin", limit=4)
    capsys.readouterr()
    assert main(["ors", *map(str, runs), "--out", str(tmp_path / "ors-limit"), "--bootstrap", "300"]) == 0
    limited = json.loads((tmp_path / "ors-limit" / "ors.json").read_text("utf-8"))
    assert limited["n_by_method"][model]["C-pinyin"] == summary(runs[1])["n_attacked"] < len(attacked[runs[1]]), \
        "the first 4 pairs should hold fewer attacked questions than all 10, or this checks nothing"
    assert limited["resampling"][model] == "examples-per-run"
    assert f"its {len(attacked[runs[1]])} stored attacked records disagree with summary.json's counts" \
        in limited["fallback"][model]


def test_runs_on_different_data_share_no_question(
    tiny_nli_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two data files whose examples have the same ids (ocnli-0 ... ocnli-9) but are other questions.
    runs = [tmp_path / "wi-a", tmp_path / "wi-b"]
    for out, seed, method in zip(runs, (7, 8), ("C-homophone", "C-pinyin"), strict=True):
        attack(tiny_nli_dir, write_ocnli(tmp_path / f"dev-{seed}.json", tiny_nli_pairs(10, seed=seed)), out, method)
    attacked = [[r["id"] for r in records(out, "wordimportance") if r["status"] != "skipped"] for out in runs]
    assert set(attacked[0]) & set(attacked[1]), "the two files should share some attacked ids"
    assert main(["ors", *map(str, runs), "--out", str(tmp_path / "ors"), "--bootstrap", "200"]) == 0
    report = json.loads((tmp_path / "ors" / "ors.json").read_text("utf-8"))
    model = summary(runs[0])["model"]
    assert report["n"][model] == len(attacked[0]) + len(attacked[1])
