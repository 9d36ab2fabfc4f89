"""LLM judges that abstain (re-asks of unreadable verdicts, tied log-probs) and judge prompts from a file
(``--judge-prompt``) or the built-in ``reasoning_pair``; all on the real tiny model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers.generate_only import GenerateOnly
from robusteval.errors import UserError
from robusteval.judges import (
    PLACEHOLDERS,
    AllMustPass,
    ArithmeticJudge,
    ReasoningItem,
    ReasoningJudge,
    SemanticItem,
    SemanticJudge,
    build_judge,
    check_judge_prompt,
    load_judge_prompt,
    parse_binary,
)
from robusteval.judges.errortypes import ErrorTypeClassifier
from robusteval.judges.llm import NO, YES, load_prompt
from robusteval.models.base import Capabilities

ITEMS = [
    ReasoningItem("Janet has 16 eggs. She eats 3. How many are left?", "The answer is 13. 16 - 3 = 13.",
                  "The answer is 13. 16 - 3 = 12."),
    ReasoningItem("Can birds fly?", "The answer is yes. Most birds can fly.", "The answer is yes. Fish swim."),
]


# ------------------------------------------------------------------------------------------------ re-asks
@pytest.mark.parametrize("retries", [0, 2])
def test_an_unreadable_verdict_is_asked_again_then_abstains(tiny_backend: Any, retries: int) -> None:
    window = GenerateOnly(tiny_backend)
    judge = ReasoningJudge(window, retries=retries)
    verdicts = judge.judge(ITEMS)
    asks = retries + 1
    # The tiny random model never writes a lone 0 or 1: every ask is unreadable.
    assert len(window.batches) == asks and all(len(batch) == len(ITEMS) for batch in window.batches)
    assert [(r.temperature, r.seed) for r in window.batches[0]] == [(0.0, None)] * len(ITEMS)
    for round_, batch in enumerate(window.batches[1:], 1):  # each re-ask sampled, with the round's own seed
        assert [(r.temperature, r.seed) for r in batch] == [(0.7, round_)] * len(ITEMS)
        assert [r.prompt for r in batch] == [judge.full_prompt(item) for item in ITEMS]
    for index, verdict in enumerate(verdicts):
        attempts = verdict.detail["attempts"]
        assert len(attempts) == asks and all(parse_binary(text) is None for text in attempts)
        assert attempts == [tiny_backend.generate([batch[index]])[0].text for batch in window.batches]  # seeded
        assert verdict.label is None and verdict.abstain_reason == f"unreadable verdict after {asks} ask" + (
            "s" if asks > 1 else "")
        assert verdict.raw == attempts[-1] and verdict.detail["unparsed"] is True
    assert ("retries" in judge.identity) is (retries > 0)
    if retries:
        assert judge.identity["retries"] == retries
    assert [v.to_record() for v in judge.judge(ITEMS)] == [v.to_record() for v in verdicts]  # deterministic


def test_re_asks_stop_for_the_items_that_became_readable(tiny_backend: Any) -> None:
    window = GenerateOnly(tiny_backend, readable_from_seed=2)
    verdicts = ReasoningJudge(window, retries=5).judge(ITEMS)
    assert [len(batch) for batch in window.batches] == [2, 2, 2]  # greedy, seed 1, seed 2: then all readable
    for verdict in verdicts:
        assert verdict.label is True and len(verdict.detail["attempts"]) == 3
        assert verdict.detail["attempts"][-1].startswith("1") and verdict.abstain_reason is None


def test_retries_on_a_combination_and_the_error_classifier(tiny_backend: Any, tiny_llama_dir: Path) -> None:
    window = GenerateOnly(tiny_backend)
    judge = build_judge(f"arith+hf:{tiny_llama_dir}", lambda spec: window, retries=1)
    assert isinstance(judge, AllMustPass)
    prose = ReasoningItem("Can birds fly?", "The answer is yes. Most birds can fly.", "The answer is yes. Fish swim.")
    (verdict,) = judge.judge([prose])  # arith: no equation; the model: unreadable twice
    assert verdict.label is None
    assert verdict.abstain_reason == (f"all members abstained: arith: no equation to check; llm:{tiny_backend.name}: "
                                      "unreadable verdict after 2 asks")
    classifier = ErrorTypeClassifier(GenerateOnly(tiny_backend), retries=1)
    answer = classifier.judge([prose])[0]
    assert len(answer.detail["attempts"]) == (1 if answer.label else 2)
    assert (answer.label is None) is (answer.detail["category"] is None)


def test_the_logprob_path_never_re_asks_and_abstains_on_a_tie(tiny_backend: Any) -> None:
    class Tied:
        """The real model's log-prob of "1", reported for "0" as well."""

        name = tiny_backend.name
        capabilities = tiny_backend.capabilities
        declared = Capabilities(frozenset(tiny_backend.capabilities), scores_in_context=True)

        def generate(self, requests: Any) -> Any:
            raise AssertionError("the log-prob path does not generate")

        def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "") -> list[float]:
            first = tiny_backend.continuation_logprobs(prompt, continuations, prefix=prefix)[0]
            return [first] * len(continuations)

    judge = ReasoningJudge(Tied(), retries=3)  # type: ignore[arg-type]
    assert "retries" not in judge.identity  # nothing to re-ask on a deterministic path: the same cache keys
    verdict = judge.judge(ITEMS[:1])[0]
    assert verdict.label is None and verdict.abstain_reason == "log-probs tied or not finite"
    assert json.loads(verdict.raw)["1"] == json.loads(verdict.raw)["0"]
    real = ReasoningJudge(tiny_backend, retries=3).judge(ITEMS[:1])[0]
    assert real.label is not None and "abstained" not in real.detail


def test_negative_retries_are_refused(tiny_backend: Any) -> None:
    with pytest.raises(UserError, match="negative"):
        ReasoningJudge(tiny_backend, retries=-1)
    with pytest.raises(UserError, match="negative"):
        build_judge("arith", lambda spec: tiny_backend, retries=-1)


# ------------------------------------------------------------------------------------------------ prompt files
CUSTOM = (
    "Grade the reasoning. Prices are in $$ (dollars).\n"
    "Problem: $question\n"
    "Model solution:\n${reference}\n"
    "Student solution:\n$candidate\n"
    "Reply 1 if the student's reasoning holds, 0 if not.\n"
    "Rating:\n"
)


def write(tmp_path: Path, text: str, name: str = "prompt.txt") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("text", "task", "message"),
    [
        ("Judge this.\n$question\n$answer\n$candidate\nRating:", "reasoning",
         r":3: unknown placeholder \$answer; a reasoning prompt takes \$question, \$reference, \$candidate$"),
        ("Judge this.\n$question\n$reference\nRating:", "reasoning",
         ": no \\$candidate placeholder; a reasoning prompt must show the judged text as \\$candidate"),
        ("Costs $5 each.\n$candidate\nRating:", "reasoning", ":1: '\\$5 each.' is not a placeholder; .*as \\$\\$$"),
        ("$original\n\n$ perturbed", "semantic", ":3: '\\$ perturbed' is not a placeholder"),
        ("$original\n${candidate}\nRating:", "semantic",
         ":2: unknown placeholder \\$candidate; a semantic prompt takes \\$original, \\$perturbed$"),
        ("$original only\nRating:", "semantic", ": no \\$perturbed placeholder"),
    ],
)
def test_a_bad_prompt_file_is_refused_with_one_line(tmp_path: Path, text: str, task: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError, match=message) as caught:
        load_judge_prompt(path, task)
    assert str(caught.value).startswith(path) and "\n" not in str(caught.value)
    with pytest.raises(UserError, match=message):  # the same refusal before any model loads
        check_judge_prompt(path, task)
    with pytest.raises(UserError, match=message):
        build_judge("hf:x", lambda spec: pytest.fail("no model loads for a bad prompt"), task=task, prompt_file=path)


def test_an_unreadable_prompt_file_is_refused(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.txt")
    with pytest.raises(UserError, match=r"judge prompt .*nowhere\.txt: cannot read it \(no such file"):
        load_judge_prompt(missing, "reasoning")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Grade it.\nCo\u00fbt: $candidate\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin\.txt:2: judge prompt is not UTF-8 text"):
        load_judge_prompt(str(latin), "reasoning")
    check_judge_prompt(None, "reasoning")  # unset is fine


def test_a_custom_prompt_replaces_the_template_on_both_paths(tmp_path: Path, tiny_llama_dir: Path,
                                                             tiny_backend: Any) -> None:
    path = write(tmp_path, CUSTOM, "my-criteria.txt")
    assert load_judge_prompt(path, "reasoning") == CUSTOM
    builtin = ReasoningJudge(tiny_backend)
    judge = build_judge(f"hf:{tiny_llama_dir}", lambda spec: tiny_backend, prompt_file=path)
    assert isinstance(judge, ReasoningJudge)
    assert judge.identity["prompt"] == "my-criteria.txt" and builtin.identity["prompt"] == "reasoning"
    assert judge.identity["prompt_sha256"] != builtin.identity["prompt_sha256"]
    assert {k: v for k, v in judge.identity.items() if k not in ("prompt", "prompt_sha256")} == {
        k: v for k, v in builtin.identity.items() if k not in ("prompt", "prompt_sha256")}
    item = ITEMS[0]
    prefix, prompt = judge.render(item)
    assert prefix == "Grade the reasoning. Prices are in $ (dollars).\nProblem: "  # "$$" is a dollar sign
    assert prefix + prompt == (f"Grade the reasoning. Prices are in $ (dollars).\nProblem: {item.question}\n"
                               f"Model solution:\n{item.reference}\nStudent solution:\n{item.candidate}\n"
                               "Reply 1 if the student's reasoning holds, 0 if not.\nRating:")
    # Log-prob path: the custom prompt is what the model scores.
    verdict = judge.judge([item])[0]
    lp_yes, lp_no = tiny_backend.continuation_logprobs(prompt, [YES, NO], prefix=prefix)
    assert json.loads(verdict.raw) == pytest.approx({"1": lp_yes, "0": lp_no}, abs=1e-4)
    assert verdict.label is (lp_yes > lp_no)
    # Generate path: the full custom prompt is sent.
    window = GenerateOnly(tiny_backend)
    generated = ReasoningJudge(window, prompt_text=CUSTOM, prompt_label="my-criteria.txt").judge([item])[0]
    assert window.batches[0][0].prompt == prefix + prompt
    assert generated.raw == tiny_backend.generate(window.batches[0])[0].text
    # Without a label a prompt text is "custom"; a semantic prompt file works for the semantic judge.
    assert ReasoningJudge(tiny_backend, prompt_text=CUSTOM).identity["prompt"] == "custom"
    semantic_path = write(tmp_path, "Same question?\nA: $original\nB: $perturbed\nRating:", "same.txt")
    semantic = build_judge("hf:x", lambda spec: tiny_backend, task="semantic", prompt_file=semantic_path)
    assert isinstance(semantic, SemanticJudge) and semantic.identity["prompt"] == "same.txt"
    assert semantic.full_prompt(SemanticItem("a?", "b?")) == "Same question?\nA: a?\nB: b?\nRating:"


def test_a_prompt_starting_with_a_placeholder_has_no_prefix(tiny_backend: Any) -> None:
    judge = ReasoningJudge(tiny_backend, prompt_text="$candidate\nIs that right? 1 or 0.\nRating:")
    item = ITEMS[1]
    prefix, prompt = judge.render(item)
    assert prefix == "" and prompt == f"{item.candidate}\nIs that right? 1 or 0.\nRating:"
    lp_yes, lp_no = tiny_backend.continuation_logprobs(prompt, [YES, NO])
    assert json.loads(judge.judge([item])[0].raw) == pytest.approx({"1": lp_yes, "0": lp_no}, abs=1e-4)


def test_prompt_files_apply_to_every_llm_atom_only(tmp_path: Path, tiny_backend: Any) -> None:
    path = write(tmp_path, CUSTOM)
    judge = build_judge("arith+vote:hf:a,hf:b,hf:c", lambda spec: tiny_backend, prompt_file=path, retries=2)
    assert isinstance(judge, AllMustPass) and isinstance(judge.members[0], ArithmeticJudge)
    llms = judge.members[1].members  # type: ignore[attr-defined]
    assert [m.template_text for m in llms] == [CUSTOM] * 3 and [m.retries for m in llms] == [2] * 3


# ------------------------------------------------------------------------------------------------ reasoning_pair
def test_the_reasoning_pair_prompt_judges_without_the_question(tiny_backend: Any, tiny_llama_dir: Path) -> None:
    text = load_prompt("reasoning_pair")
    assert "$reference" in text and "$candidate" in text and "$question" not in text
    assert text.rstrip().endswith("Rating:") and "1 if" in text and "0 if" in text
    judge = ReasoningJudge(tiny_backend, prompt_name="reasoning_pair")
    assert judge.identity["prompt"] == "reasoning_pair"
    assert judge.identity["prompt_sha256"] != ReasoningJudge(tiny_backend).identity["prompt_sha256"]
    item = ITEMS[0]
    full = judge.full_prompt(item)
    assert item.question not in full and item.reference in full and item.candidate in full
    assert full.endswith("Rating:") and "$" not in full
    built = build_judge(f"hf:{tiny_llama_dir}", lambda spec: tiny_backend, prompt_name="reasoning_pair")
    assert isinstance(built, ReasoningJudge) and built.template_text == text
    assert built.judge([item])[0].label is not None  # judged on the log-prob path
    with pytest.raises(UserError, match=r"no built-in judge prompt 'nonesuch'; built-in prompts: .*reasoning_pair"):
        ReasoningJudge(tiny_backend, prompt_name="nonesuch")
    with pytest.raises(UserError, match="unknown placeholder \\$reference; a semantic prompt"):
        SemanticJudge(tiny_backend, prompt_name="reasoning_pair")


def test_placeholders_are_those_of_the_built_in_prompts() -> None:
    assert PLACEHOLDERS == {"reasoning": ("question", "reference", "candidate"),
                            "semantic": ("original", "perturbed")}
    for name, task in (("reasoning", "reasoning"), ("reasoning_pair", "reasoning"), ("semantic", "semantic")):
        text = load_prompt(name)
        assert all(f"${p}" in text for p in PLACEHOLDERS[task] if not (name == "reasoning_pair" and p == "question"))
