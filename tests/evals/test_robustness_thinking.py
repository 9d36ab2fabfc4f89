"""``robustness`` end to end on a reasoning model (issue 27): every label is read from the reply, never the trace,
and the outcome rows keep both; a model without thinking keeps its rows and summary as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robusteval as rv
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.robustness import OUTCOME_STAGE, RobustnessConfig, robustness
from robusteval.models.generation import GenerationOptions
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.store import RunStore

#: Labels "1"/"0": the loopback server's trace writes "0" first and its reply says "1" (helpers.servers).
TEMPLATE = {
    "name": "rating",
    "description": "rate the statement: 1 sound, 0 not",
    "labels": {"1": ["1"], "0": ["0"]},
    "verbalizers": {"1": "1", "0": "0"},
    "text_fields": ["text"],
    "prefix": "",
    "prompt": "Rate this statement 1 (sound) or 0 (not): $text\nRating:",
}


def _data(tmp_path: Path) -> rv.DataSpec:
    path = tmp_path / "statements.jsonl"
    statements = [
        "Three plus four makes seven apples in the basket.",
        "Ice melts when the kitchen gets warmer.",
        "A week has seven days and a weekend has two.",
    ]
    path.write_text(
        "".join(
            json.dumps({"uid": f"s{i}", "text": t, "label": "1"}) + "\n" for i, t in enumerate(statements)
        ),
        "utf-8",
    )
    return rv.DataSpec("jsonl", str(path), fields="id=uid,question=text,answer=label", answer_type="label")


def test_robustness_reads_each_label_from_the_reply(tmp_path: Path) -> None:
    from helpers.servers import JUDGE_REASONING_REPLY, fake_openai_server

    template = tmp_path / "rating.json"
    template.write_text(json.dumps(TEMPLATE), "utf-8")
    config = RobustnessConfig(
        data=_data(tmp_path),
        perturbation=PerturbationSpec(),
        sets="C-swap",
        prompt=PromptOptions(template=str(template)),
        generation=GenerationOptions(chat=True),
        bootstrap=20,
    )
    out = tmp_path / "rb"
    with fake_openai_server(tmp_path, "judge-reasoning") as server:
        backend = rv.load_model(f"openai:r1@{server.base_url}", endpoint="chat")
        summary = robustness(config, backend, out)
    # The trace says 0 first, the reply 1: every label is the reply's, so all are right (the trace would give 0).
    assert summary["acc_original"] == 1.0 and summary["acc"]["C-swap"] == 1.0
    assert summary["thinking_truncated"]["original"]["count"] == 0
    rows = RunStore.open(out).records(OUTCOME_STAGE)
    assert len(rows) == 3
    for row in rows:
        assert row["label"] == row["label_original"] == "1"
        assert row["thinking"] == row["thinking_original"] == JUDGE_REASONING_REPLY["reasoning_content"]
        assert row["reply"] == JUDGE_REASONING_REPLY["content"] and row["thinking_truncated"] is False


def test_a_classifier_without_thinking_keeps_its_rows(tiny_backend, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = RobustnessConfig(
        data=_data(tmp_path), perturbation=PerturbationSpec(), sets="C-swap", bootstrap=20
    )
    summary = robustness(config, tiny_backend, tmp_path / "plain")
    assert "thinking_truncated" not in summary
    rows = RunStore.open(tmp_path / "plain").records(OUTCOME_STAGE)
    assert rows and all("thinking" not in r and "thinking_original" not in r for r in rows)


def test_the_classifiers_trace_budget_is_an_option(tmp_path: Path) -> None:
    """--max-thinking-tokens of robustness reaches the classifier (it used to be a fixed 2,048): the chat requests
    ask for the label's tokens plus the trace's, and the run identity records it; unset, nothing changes."""
    from helpers.servers import fake_openai_server
    from robusteval.errors import UserError
    from robusteval.text.thinking import ReasoningOptions

    template = tmp_path / "rating.json"
    template.write_text(json.dumps(TEMPLATE), "utf-8")
    sent = {}
    for budget in (300, None):
        config = RobustnessConfig(data=_data(tmp_path), perturbation=PerturbationSpec(), sets="C-swap",
                                  prompt=PromptOptions(template=str(template)),
                                  generation=GenerationOptions(chat=True), bootstrap=20,
                                  thinking=ReasoningOptions(max_thinking_tokens=budget))
        out = tmp_path / f"rb-{budget}"
        with fake_openai_server(tmp_path, "judge-reasoning") as server:
            robustness(config, rv.load_model(f"openai:r1@{server.base_url}", endpoint="chat"), out)
            sent[budget] = {json.loads(line)["body"]["max_tokens"] for line in server.log_path.read_text().splitlines()}
        identity = RunStore.open(out).identity
        assert ("max_thinking_tokens" in json.dumps(identity)) == (budget is not None)
    assert sent[300] == {sent[None].pop() + 300} and not sent[None]
    with pytest.raises(UserError, match="max_thinking_tokens"):
        RobustnessConfig(data=_data(tmp_path), sets="C-swap", generation=GenerationOptions(chat=True),
                         thinking=ReasoningOptions(max_thinking_tokens=0))
