"""``robusteval attack matcha`` with long questions (issue 22): one longer than the model's context is skipped
with one line naming it and counted in ``skip_reasons`` (out of ACC's denominator), the others proceed; a
3,000-token one is attacked with its largest allocation far below a [Q, K] attention mask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from helpers.datafiles import write_jsonl
from helpers.memory import LargestAllocation, long_math_rows
from robusteval.cli.main import main
from robusteval.models.context import PROMPT_TOO_LONG
from robusteval.store import SUMMARY_NAME, RunStore


def test_long_questions_are_attacked_or_skipped_never_oom(tiny_trained_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_trained_dir)
    data = write_jsonl(tmp_path / "long.jsonl", long_math_rows(tokenizer.encode, 3000, 5000))
    out = tmp_path / "run"
    with LargestAllocation(along=3000) as seen:  # tensors spanning the long question
        code = main(["attack", "matcha", "--model", f"hf:{tiny_trained_dir}", "--dataset", "jsonl",
                     "--data-file", str(data), "--answer-type", "number", "--target-answer", "clean",
                     "--judge", "arith", "--semantic-judge", "none", "--steps", "1", "--insert-ratio", "0.02",
                     "--max-new-tokens", "24", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "context" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("example too-long: prompt is 5,") and lines[0].endswith(
        " tokens + 24 to generate, over the model's 4,096-token context; skipped"), lines[0]

    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["skip_reasons"].get(PROMPT_TOO_LONG) == 1
    assert summary["n"] == 4  # the example the model cannot read is not a wrong answer
    store = RunStore.open_existing(out)
    try:
        rows = {r["id"]: r for r in store.records("matcha_outcome")}
    finally:
        store.close()
    assert rows["too-long"]["skip_reason"] == PROMPT_TOO_LONG and not rows["too-long"]["attacked"]
    assert rows["long"]["attacked"], rows["long"].get("skip_reason")
    assert any(r["attacked"] for name, r in rows.items() if name.startswith("short"))

    prompt = 3000 + 300  # the long question, with the exemplars and room for its insertions
    # Before: a float [1, 1, Q, K] mask per row (44 MB here; 59 GB for the 9.8k tokens).
    assert seen.bytes < prompt * prompt // 2, seen.op  # under half a boolean [Q, Q] mask
