"""Data on which two tiny models really differ: the math questions with the trained model's own answers as gold
(read from a real eval run of it), so the trained model is right on every one and the random model on few."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.runs import records
from helpers.studies import MATH
from robusteval.data.spec import DataSpec
from robusteval.evals.answer_first import EvalConfig, evaluate
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions

MAX_NEW_TOKENS = 12


def answered_by(model_dir: Path, root: Path, n: int) -> Path:
    """``root/mine.jsonl``: the first ``n`` math questions, each with ``model_dir``'s answer as its gold."""
    probe = root / "probe"
    evaluate(
        EvalConfig(data=DataSpec("jsonl", MATH, limit=n),
                   generation=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS)),
        load_backend(f"hf:{model_dir}"),
        probe,
    )
    rows = [
        {"id": r["id"], "question": r["question"], "answer": r["predicted"]}
        for r in records(probe, "answer_first")
    ]
    assert all(row["answer"] for row in rows), "the trained model gave no answer: a test would prove nothing"
    path = root / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
