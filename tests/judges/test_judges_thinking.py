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

    def continuation_logprobs(self, prompt: str, continuations: list[str], prefix: str = "", *,
                              messages: tuple = ()) -> list[float]:
        self.sent.append(ScoreRequest(prompt, tuple(continuations), prefix, messages=tuple(messages)))
        return self.inner.continuation_logprobs(prompt, continuations, prefix,  # type: ignore[attr-defined]
                                                messages=messages)


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


def test_classification_on_a_reasoning_model_reads_the_label_after_the_trace(tiny_r1_dir: Path,
                                                                              tmp_path: Path) -> None:
    """Soft labels are scored after the closed trace; hard labels are read from the reply's first line, and a
    trace never closed gives no label (kept as such, never parsed from the trace)."""
    from robusteval.evals.classification import ClassificationTemplate, LabelClassifier
    from robusteval.store import RunStore

    backend = Recording(load_backend(f"hf:{tiny_r1_dir}"))
    template = ClassificationTemplate.load("nli-zh")
    items = [{"premise": "他在跑步", "hypothesis": "他在运动"}]
    with RunStore.open(tmp_path / "run", identity={"t": 1}) as store:
        classifier = LabelClassifier(backend, template, store, chat=True, system_prompt="",  # type: ignore[arg-type]
                                     thinking_budget=12)
        assert classifier.identity()["thinking"]["kind"] == "think-tags"
        (record,) = classifier.classify(items)
    words = [template.verbalizers[label] for label in template.verbalizers]
    assert backend.sent and all(c == "\n</think>\n\n" + w for c, w in zip(backend.sent[0].continuations, words,
                                                                            strict=True))
    assert "thinking" in record and record["soft_label"] in template.labels
    if record["thinking_truncated"]:
        assert record["label"] is None and record["reply"] == ""
    else:
        assert record["label"] == template.parse(record["reply"].split("\n", 1)[0])


def test_an_api_judge_whose_server_writes_the_think_tags_into_content_is_split(tmp_path: Path) -> None:
    """No reasoning parser on the server: ``content`` is ``<think>Rating: 0? ...</think> Rating: 1``; the verdict is
    the one after the trace (read whole, the trace's 0 came first)."""
    from helpers.servers import JUDGE_THINK_CONTENT, fake_openai_server

    with fake_openai_server(tmp_path, "judge-think-content") as server:
        backend = load_backend(f"openai:r1@{server.base_url}", endpoint="chat", logprobs="off")
        judge = ReasoningJudge(backend)
        (verdict,) = judge.judge([ReasoningItem("q", "The answer is 7. 3 + 4 = 7.", "The answer is 7. 3 + 4 = 7.")])
        backend.close()
    assert verdict.label is True and verdict.raw == JUDGE_THINK_CONTENT
    assert verdict.detail["thinking"] == "Rating: 0? No, every step holds."
    assert verdict.detail["reply"] == "Rating: 1"


def test_the_judges_trace_budget_is_an_option(tmp_path: Path) -> None:
    """--judge-max-thinking-tokens reaches the judge (it used to be a fixed 2,048 a caller could not change): an API
    judge, whose thinking no template announces, gets the trace's budget on top of the verdict's only when given,
    and its identity says so (cached verdicts of another budget are never reused)."""
    from robusteval.judges.base import REASONING, build_judge
    from robusteval.judges.llm import BinaryLLMJudge

    item = ReasoningItem("q", "The answer is 7. 3 + 4 = 7.", "The answer is 7. 3 + 4 = 7.")
    with fake_openai_server_for(tmp_path) as server:
        def load(spec: str) -> object:
            return load_backend(spec, endpoint="chat", logprobs="off")

        spec = f"openai:r1@{server.base_url}"
        given = build_judge(spec, load, task=REASONING, thinking_budget=300)
        plain = build_judge(spec, load, task=REASONING)
        assert isinstance(given, BinaryLLMJudge) and isinstance(plain, BinaryLLMJudge)
        assert given.judge([item])[0].label is True and plain.judge([item])[0].label is True
        sent = [json.loads(line)["body"]["max_tokens"] for line in server.log_path.read_text().splitlines()]
    assert sent == [given.max_new_tokens + 300, plain.max_new_tokens]
    assert given.identity["thinking_budget"] == 300 and "thinking_budget" not in plain.identity


def fake_openai_server_for(tmp_path: Path):  # type: ignore[no-untyped-def]
    from helpers.servers import fake_openai_server

    return fake_openai_server(tmp_path, "judge-reasoning")
