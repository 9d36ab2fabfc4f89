"""LLM judges on a real (tiny, random) model: the verdict comes from the model's own output, never the prompt."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from robusteval.judges import (
    AlwaysSameMeaning,
    ReasoningItem,
    ReasoningJudge,
    SemanticItem,
    SemanticJudge,
    build_judge,
    parse_binary,
)
from robusteval.judges.llm import NO, YES, load_prompt
from robusteval.models import GENERATE, Generation, GenerationRequest
from robusteval.models.base import Capabilities

ITEMS = [
    ReasoningItem(
        "Janet has 16 eggs. She eats 3. How many are left?",
        "The answer is 13. She starts with 16 eggs and eats 3, so 16 - 3 = 13.",
        "The answer is 13. She starts with 16 eggs and eats 3, so 16 - 3 = 12.",
    ),
    ReasoningItem("Can birds fly?", "The answer is yes. Most birds can fly.", "The answer is yes. Fish swim."),
    ReasoningItem("What is ${x} {y}?", "The answer is 1. $$ {0} {question}", "The answer is 1. $candidate"),
]
SEM_ITEMS = [
    SemanticItem("How many eggs are left?", "How many eggs are left? zq"),
    SemanticItem("How many eggs are left?", "How many apples are left?"),
]


class GenerateOnly:
    """The real backend seen through an API-like window: generation only, every request recorded."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.capabilities = frozenset({GENERATE})
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.requests.extend(requests)
        return self.inner.generate(requests)


def test_prompts_are_package_data_with_the_expected_placeholders() -> None:
    reasoning, semantic = load_prompt("reasoning"), load_prompt("semantic")
    for field in ("$question", "$reference", "$candidate"):
        assert reasoning.count(field) == 1
    for field in ("$original", "$perturbed"):
        assert semantic.count(field) == 1
    # The prompts name both digits: a parser reading the prompt would find a "1" (the reference code's bug).
    assert "1 if" in reasoning and "0 if" in reasoning


def test_rendering_is_literal_and_ends_at_the_cue(tiny_backend: Any) -> None:
    judge = ReasoningJudge(tiny_backend)
    prefix, prompt = judge.render(ITEMS[2])
    full = prefix + prompt
    assert full == judge.full_prompt(ITEMS[2])
    # Dollar signs and braces in model text are inert: no second substitution, no str.format.
    assert "What is ${x} {y}?" in full and "$$ {0} {question}" in full and "The answer is 1. $candidate" in full
    assert full.endswith("Rating:") and "$question" not in full
    assert "$" not in prefix and prefix.endswith("Question:\n")


def test_reasoning_verdict_is_read_from_the_models_logprobs(tiny_backend: Any) -> None:
    judge = ReasoningJudge(tiny_backend)
    verdicts = judge.judge(ITEMS)
    assert len(verdicts) == len(ITEMS)
    for item, verdict in zip(ITEMS, verdicts, strict=True):
        prefix, prompt = judge.render(item)
        lp_yes, lp_no = tiny_backend.continuation_logprobs(prompt, [YES, NO], prefix=prefix)
        # The items were scored together (rows padded to one length): equal up to float rounding.
        assert json.loads(verdict.raw) == pytest.approx({"1": lp_yes, "0": lp_no}, abs=1e-4)
        assert verdict.detail == {"method": "logprobs", "logprob_1": json.loads(verdict.raw)["1"],
                                  "logprob_0": json.loads(verdict.raw)["0"]}
        assert verdict.label is (lp_yes > lp_no)
        assert verdict.judge == f"llm:{tiny_backend.name}"
    assert judge.identity["method"] == "logprobs" and len(judge.identity["prompt_sha256"]) == 16


def test_semantic_verdict_is_read_from_the_models_logprobs(tiny_backend: Any) -> None:
    judge = SemanticJudge(tiny_backend)
    for item, verdict in zip(SEM_ITEMS, judge.judge(SEM_ITEMS), strict=True):
        prefix, prompt = judge.render(item)
        assert item.original in prompt and item.perturbed in prompt
        lp_yes, lp_no = tiny_backend.continuation_logprobs(prompt, [YES, NO], prefix=prefix)
        assert verdict.label is (lp_yes > lp_no)
        assert json.loads(verdict.raw) == pytest.approx({"1": lp_yes, "0": lp_no}, abs=1e-4)


def test_generation_path_reads_only_the_generated_text(tiny_backend: Any) -> None:
    window = GenerateOnly(tiny_backend)
    judge = ReasoningJudge(window)
    verdicts = judge.judge(ITEMS)
    assert judge.identity["method"] == "generate"
    assert len(window.requests) == len(ITEMS)
    for item, request, verdict in zip(ITEMS, window.requests, verdicts, strict=True):
        assert request.max_new_tokens == 3 and request.temperature == 0.0 and request.prefix == ""
        assert request.prompt == judge.full_prompt(item)
        expected = tiny_backend.generate([request])[0].text  # greedy: the same text again
        assert verdict.raw == expected
        assert verdict.label is parse_binary(expected)
        assert verdict.detail["unparsed"] is (verdict.label is None)


def test_none_semantic_judge_says_so() -> None:
    judge = build_judge("none", lambda spec: pytest.fail("'none' must not load a model"), task="semantic")
    assert isinstance(judge, AlwaysSameMeaning) and "always-same-meaning" in judge.name
    assert [v.label for v in judge.judge(SEM_ITEMS)] == [True, True]


def test_model_spec_builds_the_judge_for_the_role(tiny_llama_dir: Any, tiny_backend: Any) -> None:
    spec = f"hf:{tiny_llama_dir}"
    loaded: list[str] = []

    def loader(s: str) -> Any:
        loaded.append(s)
        return tiny_backend

    assert isinstance(build_judge(spec, loader), ReasoningJudge)
    assert isinstance(build_judge(spec, loader, task="semantic"), SemanticJudge)
    assert loaded == [spec, spec]


def test_items_of_the_wrong_kind_are_refused(tiny_backend: Any) -> None:
    with pytest.raises(TypeError, match="ReasoningItem"):
        ReasoningJudge(tiny_backend).judge(SEM_ITEMS)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("1", True),
        (" 0", False),
        ("\n1", True),
        ("1.", True),
        ("**0**", False),
        ("Rating: 1", True),
        ("0\n\nExplanation: 1", False),
        ("10", None),
        ("0.5", None),
        ("Correct", None),
        ("", None),
        ("2", None),
    ],
)
def test_parse_binary(text: str, label: bool | None) -> None:
    assert parse_binary(text) is label


def test_backend_without_a_prefix_argument_scores_the_full_prompt(tiny_backend: Any) -> None:
    class TwoArgument:
        """A log-prob backend following the base protocol's two-argument form."""

        def __init__(self) -> None:
            self.name = tiny_backend.name
            self.capabilities = tiny_backend.capabilities
            self.prompts: list[str] = []

        def generate(self, requests: Any) -> Any:
            return tiny_backend.generate(requests)

        def continuation_logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
            self.prompts.append(prompt)
            return tiny_backend.continuation_logprobs(prompt, continuations)

    backend = TwoArgument()
    judge = ReasoningJudge(backend)  # type: ignore[arg-type]
    verdict = judge.judge(ITEMS[:1])[0]
    assert backend.prompts == [judge.full_prompt(ITEMS[0])]
    lp_yes, lp_no = tiny_backend.continuation_logprobs(judge.full_prompt(ITEMS[0]), [YES, NO])
    assert json.loads(verdict.raw) == {"1": lp_yes, "0": lp_no}


# ----------------------------------------------------------------------------------------- batched scoring
MANY = [*ITEMS, ReasoningItem("What is 7 * 8?", "The answer is 56. 7 * 8 = 56.", "The answer is 56. 7 * 8 = 54."),
        *(ReasoningItem(f"What is {n} + {n}?", f"The answer is {2 * n}.", f"The answer is {2 * n}. {n} doubled.")
          for n in range(3, 9))]


def _scores(verdict: Any) -> list[float]:
    detail = verdict.detail
    return list(detail["logprobs"].values()) if "logprobs" in detail else [detail["logprob_1"], detail["logprob_0"]]


@pytest.mark.parametrize("chat", [None, True])
@pytest.mark.parametrize("kind", ["reasoning", "semantic", "errortype"])
def test_a_judge_scores_all_its_items_at_once_as_one_at_a_time(
    tiny_llama_dir: Any, monkeypatch: pytest.MonkeyPatch, kind: str, chat: bool | None
) -> None:
    """Every item in one call of the backend, which runs ceil(rows / batch_size) forwards: the same verdicts
    (labels, categories; scores up to float rounding) as judging one item at a time, and the same identity."""
    from robusteval.judges.errortypes import ErrorTypeClassifier
    from robusteval.models import load_backend
    from robusteval.models.hf import HFBackend

    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=4, device="cpu")
    assert isinstance(backend, HFBackend)
    backend.mask_budget = 1 << 40  # rows per forward set by batch_size alone (the mask budget has its own tests)
    items = MANY if kind != "semantic" else [SemanticItem(i.question, i.question + " zq" * n)
                                             for n, i in enumerate(MANY)]
    judge_type = {"reasoning": ReasoningJudge, "semantic": SemanticJudge, "errortype": ErrorTypeClassifier}[kind]
    judge = judge_type(backend, chat=chat)
    identity = dict(judge.identity)
    alone = [judge.judge([item])[0] for item in items]
    forwards: list[int] = []
    forward = backend.forward

    def counting(prefix_ids: Any, suffix_embeds: Any, logits_to_keep: int = 0) -> Any:
        forwards.append(len(suffix_embeds))
        return forward(prefix_ids, suffix_embeds, logits_to_keep)

    monkeypatch.setattr(backend, "forward", counting)
    together = judge.judge(items)
    rows = len(items) * len(judge.choices)
    assert forwards == [4] * (rows // 4) + ([rows % 4] if rows % 4 else [])  # not one forward per item
    assert [v.label for v in together] == [v.label for v in alone]
    assert [v.detail.get("category") for v in together] == [v.detail.get("category") for v in alone]
    for batched, single in zip(together, alone, strict=True):
        assert _scores(batched) == pytest.approx(_scores(single), abs=1e-4)
        assert batched.judge == single.judge and batched.detail.keys() == single.detail.keys()
    assert judge.identity == identity  # verdict cache keys do not change


def test_a_backend_without_the_batched_method_is_asked_once_per_item(tiny_backend: Any) -> None:
    class PerRequest:
        """The hf backend's one-request method only, with every call recorded."""

        def __init__(self) -> None:
            self.name = tiny_backend.name
            self.capabilities = tiny_backend.capabilities
            # It scores with a cached prefix (declared, as a backend does), one request at a time.
            self.declared = Capabilities(frozenset(tiny_backend.capabilities), scores_in_context=True)
            self.calls: list[tuple[str, str]] = []

        def generate(self, requests: Any) -> Any:
            raise AssertionError("not asked to generate")

        def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "") -> list[float]:
            self.calls.append((prefix, prompt))
            return tiny_backend.continuation_logprobs(prompt, continuations, prefix=prefix)

    backend = PerRequest()
    judge = ReasoningJudge(backend)  # type: ignore[arg-type]
    verdicts = judge.judge(ITEMS)
    assert backend.calls == [judge.render(item) for item in ITEMS]
    assert [v.label for v in verdicts] == [v.label for v in ReasoningJudge(tiny_backend).judge(ITEMS)]
