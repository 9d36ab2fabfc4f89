"""The rows the perturbed-benchmark section reads (``robustness_outcome``): both texts, edits and labels per
(set, example), each original example's fields computed once."""

from __future__ import annotations

from typing import Any

import pytest

import robusteval.evals.robustness.pipeline as robustness
from robusteval.data.example import Example


class Store:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def put(self, stage: str, key: str, record: dict[str, Any], *, example_id: str) -> None:
        assert stage == robustness.OUTCOME_STAGE
        self.rows[key] = record


def test_outcome_rows_compute_each_original_once(monkeypatch: pytest.MonkeyPatch) -> None:
    examples = [Example(f"e{i}", f"question {i}", "yes", "label", {"hypothesis": f"h{i}"}) for i in range(4)]
    edits = [{"start": 0, "end": 8, "original": "question", "replacement": "qeustion"}]
    sets = {name: [Example(e.id, e.question.replace("question", "qeustion") if name == "C-swap" else e.question,
                           "yes", "label", {**e.meta, "perturbation": {"fields": {"text": {"edits": edits,
                                                                                            "method": name}}}})
                   for e in examples] for name in ("C-swap", "C-ocr")}
    by_set = {"original": [{"label": "yes"}] * 4, "C-swap": [{"label": "no"}] * 4, "C-ocr": [{"label": "yes"}] * 4}
    seen: list[str] = []
    fields_of = robustness.example_fields
    monkeypatch.setattr(robustness, "example_fields", lambda ex: seen.append(ex.id) or fields_of(ex))
    store = Store()
    robustness.store_outcomes(store, examples, sets, by_set, "hard")  # type: ignore[arg-type]
    assert len(seen) == len(examples) * (1 + len(sets))  # each original once, each version once
    assert len(store.rows) == 8
    swapped = next(r for r in store.rows.values() if r["set"] == "C-swap" and r["id"] == "e1")
    assert swapped["fields"]["text"] == {"original": "question 1", "perturbed": "qeustion 1", "edits": edits,
                                         "method": "C-swap"}
    assert swapped["fields"]["hypothesis"]["original"] == "h1" and swapped["changed"]
    assert (swapped["label_original"], swapped["label"], swapped["correct_original"], swapped["correct"]) == \
        ("yes", "no", True, False)
    unchanged = next(r for r in store.rows.values() if r["set"] == "C-ocr" and r["id"] == "e1")
    assert not unchanged["changed"] and unchanged["correct"]
