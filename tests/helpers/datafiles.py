"""Small data files in the shared datasets' own formats, written by tests that need a file but not the real data.

Seeded, so the same call writes the same bytes (run identities include the data file's hash).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

NAMES = ("Tom", "Ana", "Li", "Sara", "Omar", "Mia", "Ivan", "Noor")
THINGS = ("apples", "books", "pens", "coins", "cards", "shells")


def gsm8k_records(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` GSM8K-format records (``question``; ``answer`` ending in ``#### N``) of one-step additions."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        who, what = rng.choice(NAMES), rng.choice(THINGS)
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        rows.append({
            "question": f"{who} has {a} {what} and gets {b} more. How many {what} does {who} have now?",
            "answer": f"{who} has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} {what}.\n#### {a + b}",
        })
    return rows


def write_gsm8k(path: Path, n: int, seed: int = 0) -> Path:
    """A GSM8K-format ``test.jsonl`` of ``n`` synthetic questions (see :func:`gsm8k_records`)."""
    return write_jsonl(path, gsm8k_records(n, seed))


def write_ocnli(path: Path, pairs: Iterable[Mapping[str, str]]) -> Path:
    """An OCNLI-format ``dev.json`` (JSON lines: sentence1, sentence2, label, id) from premise/hypothesis/label."""
    rows = [{"level": "easy", "sentence1": p["premise"], "sentence2": p["hypothesis"], "label": p["label"],
             "genre": "test", "id": i} for i, p in enumerate(pairs)]
    return write_jsonl(path, rows)


def write_jsonl(path: Path, rows: Iterable[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
