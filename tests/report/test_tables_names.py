"""Terminal tables show a model by a readable name, never cut (issue 28 polish: ``hf:/home/user/.cac...``)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from robusteval.report import tables
from robusteval.report.tables import print_summary_table, readable_names

SPEC = "hf:/home/user/.cache/robusteval/quickstart/tiny-llama-chat"


def _narrow(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr(tables, "stdout", Console(file=out, width=70, no_color=True))
    return out


def test_a_narrow_terminal_shows_the_model_name_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _narrow(monkeypatch)
    rows = [{"model": SPEC, "dataset": "gsm8k", "n": 200, "n_correct": 25, "acc": "0.125 [0.086, 0.178]"}]
    print_summary_table(
        "answer-first accuracy [95% interval]", rows, ["model", "dataset", "n", "n_correct", "acc"]
    )
    text = out.getvalue()
    assert "tiny-llama-chat" in text and "…" not in text and ".cac" not in text
    assert "0.125 [0.086, 0.178]" in text


def test_a_name_longer_than_its_column_folds_instead_of_being_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _narrow(monkeypatch)
    name = "an-unusually-long-model-name-that-cannot-fit-in-one-narrow-table-column-v2"
    print_summary_table(
        "t", [{"model": name, "acc": "0.125 [0.086, 0.178]", "n": 200}], ["model", "acc", "n"]
    )
    text = out.getvalue()
    assert "…" not in text and "".join(line.strip("│ ┃") for line in text.splitlines()).count("-v2") == 1


def test_readable_names_keep_what_tells_models_apart() -> None:
    names = readable_names(
        [
            "hf:/data/a/checkpoint-500",
            "hf:/data/b/checkpoint-500",
            "hf:/x/llama-3-8b",
            "openai:gpt-4o@http://127.0.0.1:8000/v1",
            "tiny-random",
            "hf:/p/q/model",
            "hf:/r/q/model",
        ]
    )
    assert names["hf:/data/a/checkpoint-500"] == "a/checkpoint-500"
    assert names["hf:/data/b/checkpoint-500"] == "b/checkpoint-500"
    assert names["hf:/x/llama-3-8b"] == "llama-3-8b" and names["tiny-random"] == "tiny-random"
    assert names["openai:gpt-4o@http://127.0.0.1:8000/v1"] == "gpt-4o"
    assert (names["hf:/p/q/model"], names["hf:/r/q/model"]) == ("p/q/model", "r/q/model")
