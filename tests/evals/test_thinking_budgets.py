"""Every token budget counted (issue 35): a reasoning API that spends its budget on a trace (returned apart or
hidden) counts as ``thinking_truncated`` with its interval, an empty reply cut at the limit as a counted "no reply",
never an uncounted wrong answer; budget forcing counts the trace from after its opening tag and never cuts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli.main import main
from robusteval.store import SUMMARY_NAME, RunStore
from robusteval.text.thinking import NO_REPLY_AT_LIMIT, THINKING_TRUNCATED


def api_eval(tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict, list[dict], str]:
    from helpers.servers import fake_openai_server

    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Question {i}: 3 + 4?", "answer": "7"}) + "\n"
                            for i in range(6)), encoding="utf-8")
    out = tmp_path / mode
    with fake_openai_server(tmp_path, mode) as server:
        assert main(["eval", "--model", f"openai:r1@{server.base_url}", "--endpoint", "chat", "--dataset", "jsonl",
                     "--data-file", str(data), "--answer-type", "number", "--max-new-tokens", "64",
                     "--out", str(out)]) == 0
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    return summary, RunStore.open(out).records("answer_first"), capsys.readouterr().out


@pytest.mark.parametrize("mode", ["reasoning-cut", "hidden-cut"])
def test_a_budget_spent_on_the_trace_is_counted_as_truncated(mode: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """finish_reason "length" with no content after a trace (returned as reasoning_content, or hidden and only
    counted in reasoning_tokens): 6 of 6 thinking_truncated, with an interval, never a silent wrong answer."""
    summary, rows, printed = api_eval(tmp_path, mode, capsys)
    assert summary["n"] == 6 and summary["acc"] == 0.0 and summary["skip_reasons"] == {}
    cut = summary["thinking_truncated"]
    assert (cut["count"], cut["k"], cut["n"], cut["value"]) == (6, 6, 6, 1.0)
    low, high = cut["ci95"]
    assert 0.5 < low < high == 1.0
    assert all(r["thinking_truncated"] and r["no_answer"] == THINKING_TRUNCATED and r["predicted"] is None
               and r["finish_reason"] == "length" for r in rows)
    assert f"{THINKING_TRUNCATED}: 6 of 6 (1.000 [{low:.3f}, 1.000])" in printed
    kind = summary["reasoning_format"]["kind"]
    assert kind.startswith("returned apart" if mode == "reasoning-cut" else "hidden")
    assert "no_reply" not in summary


def test_an_empty_reply_cut_at_the_limit_is_a_counted_no_reply(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    summary, rows, printed = api_eval(tmp_path, "empty-cut", capsys)
    assert summary["n"] == 6 and summary["acc"] == 0.0
    empty = summary["no_reply"]
    assert (empty["count"], empty["n"], empty["reasons"]) == (6, 6, {NO_REPLY_AT_LIMIT: 6})
    assert 0.5 < empty["ci95"][0] < empty["ci95"][1] == 1.0
    assert all(r["no_answer"] == NO_REPLY_AT_LIMIT and r["correct"] is False for r in rows)
    assert "no reply: 6 of 6 (1.000 [" in printed and NO_REPLY_AT_LIMIT in printed
    assert "thinking_truncated" not in summary  # no trace was written


def test_budget_forcing_counts_the_trace_from_after_the_opening_tag(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    """Qwen3's form: the model writes <think> itself. --max-thinking-tokens 4 used to cut the tag (reply ' <thin',
    thinking_forced False); now the tag is written whole, the 4 tokens are the trace's, and the close is forced."""
    from evals.test_thinking import eval_run
    from robusteval.models import load_backend

    summary, rows = eval_run(tiny_thinking_dir, tmp_path / "four", "--max-thinking-tokens", "4",
                             max_new_tokens=24)
    assert summary["thinking_forced"]["count"] == summary["n"] == 8 and summary["thinking_truncated"]["count"] == 0
    low, high = summary["thinking_forced"]["ci95"]
    assert low < high == 1.0
    backend = load_backend(f"hf:{tiny_thinking_dir}")
    for row in rows:
        head, close, _ = row["completion"].partition("</think>")
        assert close and head.lstrip().startswith("<think>") and not row["reply"].startswith("<thin")
        assert row["thinking_forced"] is True and row["thinking_tokens"] == 4 and not row["thinking_truncated"]
        # The trace is the 4 tokens after the tag (give or take the forced newline before the closing tag).
        trace = head.split("<think>", 1)[1]
        assert len(backend.encode(trace.rstrip("\n"))) <= 5 and row["thinking"] == trace.strip()


def test_budget_forcing_where_the_prompt_opens_the_trace_counts_it_whole(tiny_r1_dir: Path, tmp_path: Path) -> None:
    """R1's form: the generation prompt pre-fills <think>; the first token generated is the trace's."""
    from evals.test_thinking import eval_run

    summary, rows = eval_run(tiny_r1_dir, tmp_path / "r1", "--chat", "--system-prompt", "",
                             "--max-thinking-tokens", "4", max_new_tokens=24)
    assert summary["thinking_forced"]["count"] == summary["n"] == 8
    for row in rows:
        trace, close, _ = row["completion"].partition("</think>")
        assert close and "<think>" not in trace
        assert row["thinking_forced"] and row["thinking_tokens"] == 4 and not row["thinking_truncated"]


def test_matcha_help_and_docs_agree_on_the_trace_budget(capsys: pytest.CaptureFixture[str]) -> None:
    """MATCHA gives the trace --max-thinking-tokens in one generation and forces no closing tag: its --help says
    so (it used to promise the forced tag of eval's budget forcing), as docs/reasoning-models.md does."""
    with pytest.raises(SystemExit):
        main(["attack", "matcha", "--help-all"])  # the budget is a backend detail: --help-all shows it
    text = " ".join(capsys.readouterr().out.split())
    assert "attack matcha: no tag is forced" in text and "eval, variants eval: budget forcing" in text
    docs = (Path(__file__).resolve().parents[2] / "docs" / "reasoning-models.md").read_text(encoding="utf-8")
    assert "MATCHA does not force the closing tag" in " ".join(docs.split())


@pytest.mark.parametrize(("mode", "block", "reason"), [("reasoning-cut", "thinking_truncated", THINKING_TRUNCATED),
                                                       ("hidden-cut", "thinking_truncated", THINKING_TRUNCATED),
                                                       ("empty-cut", "no_reply", NO_REPLY_AT_LIMIT)])
def test_variants_eval_counts_every_reply_cut_at_the_limit(mode: str, block: str, reason: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """VAR-MATH on the same servers: 3 instances x 2 samples cut at the limit with nothing to read are 6 of 6
    counted (with an interval, printed), each generation's record says why, and every prediction is graded wrong
    (an empty reply used to be graded with no count and no reason)."""
    from helpers.servers import fake_openai_server

    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps({"id": f"sum_{k}", "question": f"What is 3 + 4 (take {k})?",
                                             "answer": 7, "template": "sum", "values": {"k": str(k)}}) + "\n"
                                 for k in range(3)), encoding="utf-8")
    out = tmp_path / mode
    with fake_openai_server(tmp_path, mode) as server:
        assert main(["variants", "eval", "--model", f"openai:r1@{server.base_url}", "--endpoint", "chat", "--chat",
                     "--instances", str(instances), "--samples", "2", "--temperature", "0.7",
                     "--max-new-tokens", "64", "--out", str(out)]) == 0
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    printed = " ".join(capsys.readouterr().out.split())
    assert summary["strict"] == 0.0 and summary["loose"] == 0.0
    counted = summary[block]
    assert (counted["count"], counted["n"]) == (6, 6) and 0.5 < counted["ci95"][0] < counted["ci95"][1] == 1.0
    other = "no_reply" if block == "thinking_truncated" else "thinking_truncated"
    assert other not in summary
    if block == "no_reply":
        assert counted["reasons"] == {NO_REPLY_AT_LIMIT: 6}
        assert f"no reply: 6 of 6 (1.000 [{counted['ci95'][0]:.3f}, 1.000]), counted wrong" in printed
    else:
        assert f"{THINKING_TRUNCATED}: 6 of 6 (1.000 [{counted['ci95'][0]:.3f}, 1.000])" in printed
    rows = RunStore.open(out).records("variants_generation")
    assert len(rows) == 6 and all(r["no_answer"] == reason and r["finish_reason"] == "length" for r in rows)
    graded = [json.loads(line) for line in (out / "graded.jsonl").read_text().splitlines()]
    assert graded and not any(g["correct"] for g in graded)
