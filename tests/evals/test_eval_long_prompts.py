"""``robusteval eval`` with long questions (issue 22): one longer than the model's context is not asked (one line
naming it, recorded as skipped, counted in ``skip_reasons`` outside ACC's denominator) and the others are; a
3,000-token one is answered with its largest allocation far below a [Q, K] attention mask."""

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


def test_eval_skips_what_the_model_cannot_read_and_answers_the_rest(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_trained_dir)
    data = write_jsonl(tmp_path / "long.jsonl", long_math_rows(tokenizer.encode, 3000, 5000))
    out = tmp_path / "run"
    argv = ["eval", "--model", f"hf:{tiny_trained_dir}", "--dataset", "jsonl", "--data-file", str(data),
            "--answer-type", "number", "--max-new-tokens", "24", "--batch-size", "4", "--out", str(out)]
    with LargestAllocation(along=3000) as seen:  # tensors spanning the long question
        assert main(argv) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "context" in line]
    assert len(lines) == 1 and lines[0].startswith("example too-long: prompt is 5,"), captured.err
    assert lines[0].endswith(" tokens + 24 to generate, over the model's 4,096-token context; skipped")
    assert f"not asked: 1 ({PROMPT_TOO_LONG} 1)" in captured.out

    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["n"] == 4 and summary["skip_reasons"] == {PROMPT_TOO_LONG: 1}
    store = RunStore.open_existing(out)
    try:
        records = {r["id"]: r for r in store.records("answer_first")}
    finally:
        store.close()
    assert records["too-long"]["skipped"] == PROMPT_TOO_LONG and records["too-long"]["prompt_tokens"] > 4096
    assert records["long"]["completion"] and records["long"]["n_tokens"] > 0  # asked and answered
    assert seen.bytes < 3300 * 3300 // 2, seen.op  # under half a boolean [Q, Q] mask (before: 8x that)

    assert main(argv) == 0  # resumed: every example is stored, the skipped one included
    assert json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))["n"] == 4
