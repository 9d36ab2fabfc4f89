"""LLM judges on reasoning models (issue 27): the log-prob path scores the verdict with the trace closed, the
generation path reads the verdict from the reply after the trace, never from the trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.judges import ReasoningItem, ReasoningJudge, SemanticItem, SemanticJudge
from robusteval.models import load_backend
from robusteval.models.base import ScoreRequest

ITEM = SemanticItem("Tom has 3 apples and gets 4 more. How many apples?",
                    "Tom has 3 red apples and gets 4 more. How many apples?")


class Recording:
    """The real hf backend, with the score requests it was sent kept for the test to read."""

    def __init__(self, backend: object):
        self.inner = backend
        self.sent: list[ScoreRequest] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def continuation_logprobs_many(self, requests: list[ScoreRequest]) -> list[list[float]]:
        self.sent += requests
        return self.inner.continuation_logprobs_many(requests)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("fixture", "closing"), [("tiny_r1_dir", "\n</think>\n\n"),
                                                  ("tiny_thinking_dir", "<think>\n\n</think>\n\n")])
def test_the_logprob_path_scores_the_verdict_after_a_closed_trace(request: pytest.FixtureRequest, fixture: str,
                                                                   closing: str) -> None:
    backend = Recording(load_backend(f"hf:{request.getfixturevalue(fixture)}"))
    judge = SemanticJudge(backend, chat=True)  # type: ignore[arg-type]
    assert judge.identity["thinking"]["kind"] == "think-tags"
    (verdict,) = judge.judge([ITEM])
    assert verdict.label is not None
    (sent,) = backend.sent
    assert sent.continuations == (closing + "1", closing + "0")
    # R1's generation prompt opens the trace: only its closing tag is scored; Qwen3's form gets the empty block.
    rendered = backend.chat_text(list(sent.messages))
    assert rendered.rstrip().endswith("<think>") == (fixture == "tiny_r1_dir")


def test_a_judge_without_thinking_scores_as_before(tiny_trained_dir: Path) -> None:
    backend = Recording(load_backend(f"hf:{tiny_trained_dir}"))
    judge = SemanticJudge(backend, chat=True)  # type: ignore[arg-type]
    judge.judge([ITEM])
    assert backend.sent[0].continuations == ("1", "0") and "thinking" not in judge.identity


def test_the_generation_path_reads_the_verdict_from_the_reply(tmp_path: Path) -> None:
    from helpers.servers import JUDGE_REASONING_REPLY, fake_openai_server

    with fake_openai_server(tmp_path, "judge-reasoning") as server:
        backend = load_backend(f"openai:r1@{server.base_url}", endpoint="chat", logprobs="off")
        judge = ReasoningJudge(backend)
        (verdict,) = judge.judge([ReasoningItem("q", "The answer is 7. 3 + 4 = 7.", "The answer is 7. 3 + 4 = 7.")])
        backend.close()
    # The trace writes "0" first; the reply says 1: the verdict is the reply's.
    assert verdict.label is True
    assert verdict.detail["thinking"] == JUDGE_REASONING_REPLY["reasoning_content"]
    assert verdict.detail["reply"] == "1"
    logged = [json.loads(line) for line in server.log_path.read_text().splitlines()]
    assert logged and logged[0]["path"].endswith("/chat/completions")
