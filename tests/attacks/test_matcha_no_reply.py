"""MATCHA's clean pass counts every reply with nothing to read (issue 35 item 2): a reply left empty by the token
limit is a counted skip ("no reply (empty, cut at the token limit)", with ``no_reply``'s interval), in ACC's n as a
wrong answer (as ``eval`` counts it), never attacked and never an uncounted wrong answer."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.text.thinking import NO_REPLY_AT_LIMIT

SAMPLE = resources.files("robusteval.data") / "samples" / "math.jsonl"


def clean_pass(model: Path, data: Path, out: Path, max_new: int, max_thinking: int) -> tuple[dict[str, Any], Any]:
    from attacks.test_matcha_thinking import matcha

    return matcha(model, out, "--data-file", str(data), "--max-new-tokens", str(max_new),
                  "--max-thinking-tokens", str(max_thinking), "--attack-limit", "0")


def test_a_reply_the_limit_left_empty_is_a_counted_skip(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    """The tiny thinking model closes some traces; with the budget ending right at an example's closing tag its
    reply is empty, cut at the limit: counted by reason, in ACC's n, not attacked."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    data = tmp_path / "all.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]), encoding="utf-8")
    _, store = clean_pass(tiny_thinking_dir, data, tmp_path / "room", 48, 32)
    closed = [r for r in store.records("matcha_clean") if r.get("thinking") and not r["thinking_truncated"]]
    assert closed, "the tiny thinking model should close some traces within the budget"
    first = closed[0]
    budget = first["reply_start"]  # the tokens up to and with the closing tag
    assert budget >= 2
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(next(r for r in rows if r["id"] == first["id"])) + "\n", encoding="utf-8")
    summary, store = clean_pass(tiny_thinking_dir, one, tmp_path / "cut", 1, budget - 1)
    [record] = store.records("matcha_clean")
    assert record["finish_reason"] == "length" and record["reply"] == "" and not record["thinking_truncated"]
    assert record["no_answer"] == NO_REPLY_AT_LIMIT and record["predicted"] is None and not record["correct"]
    assert summary["skip_reasons"] == {NO_REPLY_AT_LIMIT: 1} and summary["n_attacked"] == 0
    assert (summary["n"], summary["n_correct"]) == (1, 0)  # asked, answered nothing: wrong, in ACC's n
    empty = summary["no_reply"]
    assert (empty["count"], empty["n"], empty["reasons"]) == (1, 1, {NO_REPLY_AT_LIMIT: 1})
    assert empty["ci95"][0] < empty["ci95"][1] == 1.0
    assert summary["thinking_truncated"]["count"] == 0
    assert store.records("matcha_attack") == []


def test_an_empty_clean_reply_of_a_target_without_thinking_is_counted(tiny_backend, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The clean pass's grading (the function it runs on each decoded row) on a real model: an empty row cut at
    the limit says why and is not attackable; a row with an answer is graded as before."""
    from robusteval.attacks.matcha.config import MatchaConfig
    from robusteval.attacks.matcha.run import MatchaRunner
    from robusteval.data.example import Example
    from robusteval.models.decode import DecodedRow
    from robusteval.prompts.answer_first import exemplars_for
    from robusteval.store import RunStore

    store = RunStore.open(tmp_path / "run", {"command": "test"})
    example = Example("q1", "What is 3 + 4?", "7", "number")
    runner = MatchaRunner(tiny_backend, store, exemplars_for(None, "number"), MatchaConfig(),
                          reasoning_judge=lambda batch: [], semantic_judge=lambda batch: [])
    layout = runner.layout(example.question)
    empty = runner._graded(example, layout, DecodedRow([], "", "length"))
    assert empty["no_answer"] == NO_REPLY_AT_LIMIT and empty["predicted"] is None and not empty["correct"]
    assert runner.attackable(empty) == (False, NO_REPLY_AT_LIMIT)
    ids = tiny_backend.encode(" The answer is 7. 3 + 4 = 7.")
    answered = runner._graded(example, layout, DecodedRow(ids, tiny_backend.decode(ids), "stop"))
    assert "no_answer" not in answered and answered["predicted"] == "7" and answered["correct"]
