"""The RB-index averages only the sets that perturbed something (issue 28, item 1), end to end: a real tiny
classifier, real C-homophone edits and a real back-translation through an untrained tiny model, which never ends
its line, so every back-translation is rejected and S-backtranslation changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import summary
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.metrics.robustness import rb_index
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ocnli(tmp_path_factory.mktemp("ocnli") / "dev.json", tiny_nli_pairs(12, seed=5))


def args(model: Path, translator: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "robustness",
        "--model",
        f"hf:{model}",
        "--template",
        str(model / "template.json"),
        "--dataset",
        "ocnli",
        "--data-file",
        str(data),
        "--limit",
        "8",
        "--sets",
        "C-homophone,S-backtranslation",
        "--translator",
        f"hf:{translator}",
        "--bootstrap",
        "200",
        "--batch-size",
        "4",
        "--out",
        str(out),
        *extra,
    ]


def test_a_set_that_changed_nothing_is_left_out_of_the_rb_index(
    tiny_nli_dir: Path, tiny_llama_dir: Path, pairs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rb"
    assert main(args(tiny_nli_dir, tiny_llama_dir, pairs, out, "--changed-only")) == 0
    printed = capsys.readouterr().out
    result = summary(out)
    homophone, backtranslation = result["sets"]["C-homophone"], result["sets"]["S-backtranslation"]
    assert backtranslation["n_changed"] == 0 and backtranslation["changed_share"] == 0.0
    assert homophone["n_changed"] > 0
    assert backtranslation["in_index"] is False and homophone["in_index"] is True
    assert result["T"] == 1 and result["sets_in_index"] == ["C-homophone"]
    assert result["sets_excluded"] == ["S-backtranslation"]
    # The index is C-homophone's relative drop alone, not the mean with the empty set's 0.
    assert result["acc_original"] > 0
    assert result["rb_index"] == pytest.approx(rb_index(result["acc_original"], [homophone["acc"]]))
    lines = printed.splitlines()
    dropped = [line for line in lines if line.startswith("S-backtranslation: left out of the RB-index")]
    assert len(dropped) == 1 and "changed 0 of 8 texts" in dropped[0]
    index_line = next(line for line in lines if line.startswith("RB-index"))
    assert "over 1 of 2 set(s) (C-homophone)" in index_line and "n=8" in index_line
    # --changed-only: its own labelled table; the accuracies on changed texts are over the changed texts.
    assert "changed texts only (--changed-only)" in printed
    block = homophone["changed_only"]
    assert block["n"] == homophone["n_changed"]
    assert backtranslation["changed_only"]["n"] == 0 and backtranslation["changed_only"]["acc"] is None
    # Every interval printed has positive width (or says "n too small").
    for low, high in re.findall(r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]", printed):
        assert float(low) < float(high), printed


def test_min_changed_zero_keeps_every_set(
    tiny_nli_dir: Path, tiny_llama_dir: Path, pairs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rb0"
    assert main(args(tiny_nli_dir, tiny_llama_dir, pairs, out, "--min-changed", "0")) == 0
    result = summary(out)
    assert result["T"] == 2 and result["sets_excluded"] == []
    accs = [result["sets"][name]["acc"] for name in ("C-homophone", "S-backtranslation")]
    assert result["rb_index"] == pytest.approx(rb_index(result["acc_original"], accs))
    assert "changed_only" not in result["sets"]["C-homophone"]  # only when asked
