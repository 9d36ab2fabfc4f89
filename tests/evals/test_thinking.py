"""Thinking traces (issue 27, first part): generations split into thinking and reply, answers read from the reply
only, an unclosed trace never graded on a fragment, and nothing changed for a model that does not think."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from robusteval.cli.main import main
from robusteval.data.answers import extract_answer_first
from robusteval.errors import UserError
from robusteval.store import SUMMARY_NAME, RunStore
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningFormat,
    ReasoningOptions,
    detect_format,
    parse_tags,
    resolve_format,
    split_generation,
)

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
TAGS = ReasoningFormat("think-tags")


def test_a_trace_is_split_from_its_reply() -> None:
    text = "<think>\nThe answer is 5. Hmm, no: 3+4=7.\n</think>\nThe answer is 7. She had 3 and got 4."
    split = split_generation(text, TAGS)
    assert split.thinking == "The answer is 5. Hmm, no: 3+4=7." and split.reply == "The answer is 7. She had 3 and got 4."
    assert extract_answer_first(split.reply, "number") == "7" != extract_answer_first(text, "number")
    # R1-distill: the generation prompt opened the block, the completion holds only the closing tag.
    opened = split_generation("The answer is 5, or not.\n</think>\n\nThe answer is 7.", TAGS, opened=True)
    assert (opened.thinking, opened.reply, opened.truncated) == ("The answer is 5, or not.", "The answer is 7.", False)
    # Never closed: no reply, and said so (a fragment is never graded).
    for cut, was_opened in (("<think> The answer is 5. Let me", False), ("The answer is 5. Let me", True)):
        truncated = split_generation(cut, TAGS, opened=was_opened)
        assert truncated.truncated and truncated.reply == "" and "The answer is 5" in (truncated.thinking or "")
    # No trace at all: the whole text is the reply; a model without thinking is read as before.
    assert split_generation("The answer is 7.", TAGS).reply == "The answer is 7."
    assert split_generation(text, NO_THINKING).reply == text
    custom = split_generation("[[plan: 5]] The answer is 7.", ReasoningFormat("think-tags", "[[", "]]"))
    assert (custom.thinking, custom.reply) == ("plan: 5", "The answer is 7.")


def test_harmony_channels() -> None:
    harmony = ReasoningFormat("harmony")
    text = ("<|channel|>analysis<|message|>The answer is 5? No.<|end|><|start|>assistant<|channel|>final"
            "<|message|>The answer is 7.<|return|>")
    split = split_generation(text, harmony)
    assert (split.thinking, split.reply, split.truncated) == ("The answer is 5? No.", "The answer is 7.", False)
    cut = split_generation("<|channel|>analysis<|message|>The answer is 5", harmony)
    assert cut.truncated and cut.reply == ""


def test_formats_are_detected_and_parsed() -> None:
    from robusteval.models.tiny import CHAT_TEMPLATE, THINKING_CHAT_TEMPLATE

    assert detect_format(THINKING_CHAT_TEMPLATE) == TAGS and detect_format(CHAT_TEMPLATE) == NO_THINKING
    assert detect_format(None) == NO_THINKING
    assert detect_format("{{ '<|channel|>final<|message|>' }}").kind == "harmony"
    assert resolve_format("none", THINKING_CHAT_TEMPLATE) == NO_THINKING
    assert resolve_format("think-tags", None, "<r>,</r>") == ReasoningFormat("think-tags", "<r>", "</r>")
    assert parse_tags(None) == ("<think>", "</think>")
    for bad in ("<think>", "<a>,<a>", ",</b>"):
        with pytest.raises(ValueError):
            parse_tags(bad)


def test_bad_think_tags_are_refused_when_the_config_is_built() -> None:
    import robusteval as rv
    from robusteval.evals.answer_first import EvalConfig

    data = rv.DataSpec("jsonl", SAMPLE, limit=2, answer_type="number")
    with pytest.raises(UserError, match="think_tags"):
        EvalConfig(data=data, thinking=ReasoningOptions(think_tags="<think>"))
    with pytest.raises(UserError, match="think_tags"):
        EvalConfig(data=data, thinking=ReasoningOptions(reasoning="harmony", think_tags="<a>,</a>"))


def eval_run(model: Path, out: Path, *extra: str, max_new_tokens: int = 48) -> tuple[dict, list[dict]]:
    args = ["eval", "--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", SAMPLE, "--answer-type", "number",
            "--limit", "8", "--max-new-tokens", str(max_new_tokens), "--out", str(out), *extra]
    assert main(args) == 0
    return (json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8")),
            RunStore.open(out).records("answer_first"))


def test_eval_reads_the_answer_from_the_reply_never_the_trace(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    summary, rows = eval_run(tiny_thinking_dir, tmp_path / "auto")
    assert summary["reasoning_format"] == {"kind": "think-tags", "open": "<think>", "close": "</think>"}
    closed = [r for r in rows if not r["thinking_truncated"] and r["thinking"] is not None]
    assert closed, "the tiny thinking model should close some traces within 48 tokens"
    for row in rows:
        assert row["completion"].startswith(" <think>")  # the model thinks first (it was trained to)
        if row["thinking_truncated"]:
            assert row["predicted"] is None and row["correct"] is False and row["reply"] == ""
        else:
            assert row["predicted"] == extract_answer_first(row["reply"], "number")
    # The trace states another answer than the reply somewhere: reading the trace would change the verdicts.
    planted = [r for r in closed if extract_answer_first(r["thinking"], "number") not in (None, r["predicted"])]
    assert planted
    naive, naive_rows = eval_run(tiny_thinking_dir, tmp_path / "none", "--reasoning", "none")
    assert "reasoning_format" not in naive and all("thinking" not in r for r in naive_rows)
    by_id = {r["id"]: r for r in naive_rows}
    assert any(by_id[r["id"]]["predicted"] != r["predicted"] for r in planted)
    assert summary["thinking_truncated"]["count"] == sum(r["thinking_truncated"] for r in rows)


def test_a_trace_cut_by_the_budget_is_counted_and_never_graded(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    summary, rows = eval_run(tiny_thinking_dir, tmp_path / "short", max_new_tokens=10)
    assert all(r["thinking_truncated"] and r["predicted"] is None for r in rows)
    assert summary["acc"] == 0.0 and summary["thinking_truncated"]["count"] == summary["n"] == 8
    low, high = summary["thinking_truncated"]["ci95"]
    assert low < 1.0 == high


def test_a_model_without_thinking_is_read_as_before(tiny_trained_dir: Path, tmp_path: Path) -> None:
    summary, rows = eval_run(tiny_trained_dir, tmp_path / "plain")
    assert "reasoning_format" not in summary and "thinking_truncated" not in summary
    assert all("thinking" not in r for r in rows)
    assert "reasoning" not in RunStore.open(tmp_path / "plain").identity


def test_an_api_trace_returned_apart_is_kept_apart(tmp_path: Path) -> None:
    from helpers.servers import REASONING_REPLY, fake_openai_server

    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Question {i}: 3 + 4?", "answer": "7"}) + "\n"
                            for i in range(3)), encoding="utf-8")
    out = tmp_path / "api"
    with fake_openai_server(tmp_path, "reasoning") as server:
        args = ["eval", "--model", f"openai:r1@{server.base_url}", "--endpoint", "chat", "--dataset", "jsonl",
                "--data-file", str(data), "--answer-type", "number", "--max-new-tokens", "64",
                "--reasoning-effort", "high", "--max-tokens-field", "max_completion_tokens", "--out", str(out)]
        assert main(args) == 0
        sent = [json.loads(line)["body"] for line in server.log_path.read_text().splitlines()]
    assert all(b["reasoning_effort"] == "high" and b["max_completion_tokens"] == 64 and "max_tokens" not in b
               for b in sent)
    rows = RunStore.open(out).records("answer_first")
    for row in rows:  # the trace says 5, the reply 7: the answer is the reply's
        assert (row["thinking"], row["reply"]) == (REASONING_REPLY["reasoning_content"], REASONING_REPLY["content"])
        assert row["predicted"] == "7" and row["correct"] is True
        assert row["reasoning_tokens"] == REASONING_REPLY["reasoning_tokens"]
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["acc"] == 1.0 and summary["reasoning_format"]["kind"].startswith("returned apart")
    identity = RunStore.open(out).identity["model"]
    assert identity["reasoning_effort"] == "high" and identity["max_tokens_field"] == "max_completion_tokens"


def test_the_thinking_switch_reaches_the_template_and_the_identity(tiny_thinking_dir: Path,
                                                                   tiny_trained_dir: Path) -> None:
    from robusteval.models import load_backend
    from robusteval.models.identity import describe_model

    messages = [{"role": "user", "content": "What is 3 + 4?"}]
    off = load_backend(f"hf:{tiny_thinking_dir}", thinking="off")
    assert off.chat_text(messages).endswith("<|assistant|>\n<think>\n\n</think>\n\n")
    on = load_backend(f"hf:{tiny_thinking_dir}", thinking="on")
    assert on.chat_text(messages).endswith("<|assistant|>\n")
    assert describe_model(f"hf:{tiny_thinking_dir}", thinking="off")["thinking"] == "off"
    assert "thinking" not in describe_model(f"hf:{tiny_thinking_dir}")
    with pytest.raises(UserError, match="has no enable_thinking switch"):
        load_backend(f"hf:{tiny_trained_dir}", thinking="on")
    with pytest.raises(UserError, match=r"thinking: 'maybe' is not one of on, off"):
        load_backend(f"hf:{tiny_thinking_dir}", thinking="maybe")


def test_a_prompt_that_opens_the_trace_is_read_as_opened(tiny_r1_dir: Path, tmp_path: Path) -> None:
    """R1-distill's form: the generation prompt opens <think>; a completion without the closing tag is all trace."""
    summary, rows = eval_run(tiny_r1_dir, tmp_path / "r1", "--chat", "--system-prompt", "", max_new_tokens=24)
    assert summary["reasoning_format"]["kind"] == "think-tags"
    for row in rows:
        if "</think>" in row["completion"]:
            assert not row["thinking_truncated"] and row["reply"] == row["completion"].split("</think>", 1)[1].lstrip()
        else:  # never closed: the whole completion is trace, nothing is graded
            assert row["thinking_truncated"] and row["reply"] == "" and row["predicted"] is None
            assert row["thinking"] == row["completion"]


def test_variants_grades_the_reply_of_a_trace_returned_apart(tmp_path: Path) -> None:
    """VAR-MATH: the API's trace says 5, its reply 7; the instances' answer is 7, so strict = loose = 1 only when
    the reply is graded (the trace would give 0)."""
    from helpers.servers import REASONING_REPLY, fake_openai_server

    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps({"id": f"sum_{k}", "question": f"What is 3 + 4 (take {k})?",
                                             "answer": 7, "template": "sum", "values": {"k": str(k)}}) + "\n"
                                 for k in range(2)), encoding="utf-8")
    out = tmp_path / "var"
    with fake_openai_server(tmp_path, "reasoning") as server:
        args = ["variants", "eval", "--model", f"openai:r1@{server.base_url}", "--endpoint", "chat", "--chat",
                "--instances", str(instances), "--max-new-tokens", "64", "--out", str(out)]
        assert main(args) == 0
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["strict"] == 1.0 and summary["loose"] == 1.0
    assert summary["reasoning_format"]["kind"].startswith("returned apart")
    rows = RunStore.open(out).records("variants_generation")
    assert rows and all(r["thinking"] == REASONING_REPLY["reasoning_content"] for r in rows)
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {p["prediction"] for p in predictions} == {REASONING_REPLY["content"]}


def test_budget_forcing_caps_the_trace_and_counts_each_forced_close(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    """--max-thinking-tokens 6: the tiny model's opening tag fits, no trace closes that soon, so every one is
    closed by force and a reply generated after it; with room (32) the traces close on their own."""
    summary, rows = eval_run(tiny_thinking_dir, tmp_path / "forced", "--max-thinking-tokens", "6",
                             max_new_tokens=24)
    assert summary["thinking_forced"]["count"] == summary["n"] == 8
    assert summary["thinking_truncated"]["count"] == 0
    for row in rows:
        assert row["thinking_forced"] and row["thinking_tokens"] == 6
        assert row["completion"].count("</think>") >= 1 and not row["thinking_truncated"]
        assert row["predicted"] == extract_answer_first(row["reply"], "number")
    roomy, roomy_rows = eval_run(tiny_thinking_dir, tmp_path / "roomy", "--max-thinking-tokens", "32",
                                 max_new_tokens=24)
    assert roomy["thinking_forced"]["count"] < roomy["n"]
    assert any(not r["thinking_forced"] and r["thinking_tokens"] < 32 for r in roomy_rows)
    with pytest.raises(UserError, match="max_thinking_tokens"):
        from robusteval.text.thinking import ReasoningOptions as Options

        Options(reasoning="none", max_thinking_tokens=10)


def test_budget_forcing_in_a_chat_whose_prompt_opens_the_trace(tiny_r1_dir: Path, tmp_path: Path) -> None:
    """R1's form through its chat template: the trace starts with the reply, is capped, closed by force, and the
    reply generated after it (the conversation continued, not restarted)."""
    summary, rows = eval_run(tiny_r1_dir, tmp_path / "r1-forced", "--chat", "--system-prompt", "",
                             "--max-thinking-tokens", "5", max_new_tokens=16)
    assert summary["thinking_forced"]["count"] + sum(not r["thinking_forced"] for r in rows) == summary["n"]
    for row in rows:
        assert "</think>" in row["completion"] and not row["thinking_truncated"]
        assert row["thinking"] == row["completion"].split("</think>", 1)[0].strip()
        if row["thinking_forced"]:
            assert row["thinking_tokens"] == 5
