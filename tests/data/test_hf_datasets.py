"""The ``hf`` loader through the real ``datasets`` library, on a local dataset folder (nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.data.loaders import load_dataset
from robusteval.errors import DataError


def test_hf_loader_reads_a_local_dataset_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "toy-math"
    folder.mkdir()
    rows = [{"problem": f"What is {i} + {i}?", "solution": str(2 * i), "uid": f"u{i}"} for i in range(5)]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "train.jsonl").write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    fields = {"question": "problem", "answer": "solution", "id": "uid"}
    examples = load_dataset("hf", str(folder), fields=fields, limit=3)
    assert [(e.id, e.question, e.answer) for e in examples] == [
        (r["uid"], r["problem"], r["solution"]) for r in rows[:3]
    ]
    assert [e.id for e in load_dataset("hf", str(folder), fields=fields, split="train")] == ["u0"]
    # A non-numeric gold answer with the default number type is named by row and field.
    (folder / "test.jsonl").write_text(json.dumps({**rows[0], "solution": "many"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"toy-math \[test\]: field 'solution': expected a number, got 'many'.*\(row 0\)"):
        load_dataset("hf", str(folder), fields=fields)
