"""Error types of judged-wrong chains: deterministic checkers first, the LLM classifier (a real model, its
answers cached) for the rest, "unclassified" otherwise; the distribution summaries count every category."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from robusteval.errors import UserError
from robusteval.judges import (
    JUDGE_STAGE,
    ReasoningItem,
    Verdict,
    attach_error_types,
    build_error_classifier,
    build_judge,
    classify_errors,
    error_type_summary,
    with_cache,
)
from robusteval.judges.errortypes import ERROR_TYPES, ErrorTypeClassifier, parse_category
from robusteval.models import GENERATE, LOGPROBS
from robusteval.models.base import Capabilities
from robusteval.store import RunStore

Q = "Tom has 3 apples. He buys 5 more apples. How many apples does he have?"
REF = "The answer is 8. Tom starts with 3 apples and buys 5 more, so 3 + 5 = 8."
CALC = ReasoningItem(Q, REF, "The answer is 8. Tom has 3 apples and buys 5 more: 3 + 5 = 9, so 8 apples.")
INFO = ReasoningItem(Q, REF, "The answer is 8. Tom has 3 apples, gets 9 from a friend and buys 5: 3 + 5 = 8.")
IRRELEVANT = ReasoningItem(Q, REF, "The answer is 8. The shop is 12 minutes away. Tom buys 5 more: 3 + 5 = 8.")
LOGIC = ReasoningItem(Q, REF, "The answer is 8. Buying more means he has fewer apples, so 3 + 5 = 8.")
WRONG = Verdict(False, "llm:judge", "0")


def no_models(spec: str) -> Any:
    raise AssertionError(f"no model should load for {spec}")


def test_the_deciding_judges_own_finding_names_the_type() -> None:
    judge = build_judge("arith+grounding", no_models)
    verdicts = judge.judge([CALC, INFO, IRRELEVANT])
    types = classify_errors([CALC, INFO, IRRELEVANT], verdicts)
    assert [(t.category, t.judge) for t in types] == [
        ("wrong calculation", "arith"), ("wrong information", "grounding"), ("irrelevant information", "grounding")]
    assert types[0].detail["false_equations"][0]["text"] == "3 + 5 = 9"
    assert types[1].detail["quantity"] == "9" and types[2].detail["quantity"] == "12"


def test_an_llm_verdict_is_typed_by_the_checkers_it_did_not_run() -> None:
    types = classify_errors([CALC, INFO, LOGIC], [WRONG, WRONG, WRONG])
    assert [t.category for t in types] == ["wrong calculation", "wrong information", "unclassified"]
    assert types[2].judge == "none" and "no LLM classifier" in types[2].detail["reason"]
    not_wrong = classify_errors([CALC], [Verdict(True, "arith", "")])[0]
    assert not_wrong.category == "unclassified" and "not judged wrong" in not_wrong.detail["reason"]
    # An abstention is not a "wrong": nothing is typed, and the reason says the judge abstained.
    abstained = classify_errors([CALC], [Verdict.abstain("llm:judge", "zq", "unreadable verdict after 3 asks")])[0]
    assert abstained.category == "unclassified"
    assert abstained.detail["reason"] == "the reasoning judge abstained (unreadable verdict after 3 asks)"


def test_each_checker_is_asked_once_for_all_untyped_items_and_never_when_the_verdict_included_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from robusteval.judges.arithmetic import ArithmeticJudge
    from robusteval.judges.grounding import GroundingJudge

    asked: list[tuple[str, int]] = []
    for cls in (ArithmeticJudge, GroundingJudge):
        def counted(self: Any, items: Any, _judge: Any = cls.judge) -> Any:
            asked.append((self.name, len(items)))
            return _judge(self, items)

        monkeypatch.setattr(cls, "judge", counted)
    # Three LLM verdicts without a reason: arith is asked once about all three, grounding once about the two
    # arith could not type.
    types = classify_errors([CALC, INFO, LOGIC], [WRONG, WRONG, WRONG])
    assert [t.category for t in types] == ["wrong calculation", "wrong information", "unclassified"]
    assert asked == [("arith", 3), ("grounding", 2)]
    # A combination that included arith (it found nothing): only grounding is asked, once.
    asked.clear()
    passed = build_judge("arith", no_models).judge([INFO])[0]
    combined = Verdict(False, "arith+llm:judge", "", {"rule": "all_must_pass",
                                                       "members": [passed.to_record(), WRONG.to_record()]})
    asked.clear()
    assert [t.category for t in classify_errors([INFO, INFO], [combined, combined])] == ["wrong information"] * 2
    assert asked == [("grounding", 2)]
    # arith+grounding said why: no checker is asked again.
    asked.clear()
    verdicts = build_judge("arith+grounding", no_models).judge([CALC, INFO])
    asked.clear()
    classify_errors([CALC, INFO], verdicts)
    assert asked == []


def test_the_llm_classifier_types_what_no_checker_can_and_its_answers_are_cached(
        tiny_backend: Any, tmp_path: Path) -> None:
    store = RunStore.open(tmp_path / "run")
    classifier = with_cache(ErrorTypeClassifier(tiny_backend), store)
    first = classify_errors([CALC, LOGIC], [WRONG, WRONG], llm_classifier=classifier)
    assert first[0].category == "wrong calculation"  # a checker could tell: the model is not asked
    assert first[1].category in ERROR_TYPES and first[1].judge == f"errortype:{tiny_backend.name}"
    # The category is the model's most likely continuation among the four names.
    logprobs = first[1].detail["logprobs"]
    assert first[1].category == max(logprobs, key=logprobs.get)
    assert len(store.records(JUDGE_STAGE)) == 1
    again = classify_errors([CALC, LOGIC], [WRONG, WRONG], llm_classifier=classifier)
    assert again == first and len(store.records(JUDGE_STAGE)) == 1
    # MATCHA's outcome rows go through the same path (attach_error_types), served from the same cache.
    rows = [{"outcome": "success", "item": LOGIC, "reasoning": WRONG.to_record()}]
    found = attach_error_types(rows, lambda row: row["item"], classifier)
    assert rows[0]["error_type"] == first[1].to_record() and found["counts"][first[1].category] == 1
    assert len(store.records(JUDGE_STAGE)) == 1
    store.close()


class Scoring:
    """A scoring backend that records what it is asked and returns fixed log-probabilities."""

    name = "scoring"
    capabilities = frozenset({GENERATE, LOGPROBS})
    declared = Capabilities(capabilities, scores_in_context=True)  # its continuation_logprobs takes both

    def __init__(self, scores: list[float]):
        self.scores = scores
        self.calls: list[dict[str, Any]] = []

    def generate(self, requests: Any) -> Any:
        raise AssertionError("a scoring backend is not asked to generate")

    def continuation_logprobs(self, prompt: str, continuations: Any, prefix: str = "", messages: Any = None
                              ) -> list[float]:
        self.calls.append({"prompt": prompt, "continuations": list(continuations), "prefix": prefix,
                           "messages": messages})
        return self.scores[: len(continuations)]


class TwoArgumentScoring(Scoring):
    """The base protocol's form: no prefix, no chat."""

    declared = Capabilities(frozenset({GENERATE, LOGPROBS}))

    def continuation_logprobs(self, prompt: str, continuations: Any) -> list[float]:  # type: ignore[override]
        return super().continuation_logprobs(prompt, continuations)


def test_the_classifier_scores_the_four_category_numbers_as_the_judges_score_their_digits() -> None:
    # One length per choice: a number, never the names (whose token counts differ).
    backend = Scoring([-5.0, -1.0, -3.0, -4.0])
    classifier = ErrorTypeClassifier(backend)  # type: ignore[arg-type]
    verdict = classifier.judge([LOGIC])[0]
    assert (verdict.label, verdict.detail["category"]) == (True, "wrong reasoning")
    assert verdict.detail["logprobs"] == dict(zip(ERROR_TYPES, [-5.0, -1.0, -3.0, -4.0], strict=True))
    prefix, prompt = classifier.render(LOGIC)
    assert backend.calls == [{"prompt": prompt, "continuations": [" 1", " 2", " 3", " 4"], "prefix": prefix,
                              "messages": None}]
    assert "1. wrong calculation" in prefix and "4. irrelevant information" in prefix
    assert prompt.endswith("1, 2, 3 or 4.\nCategory:")
    # The same dispatch as the yes/no judges: a chat scores the reply's start, the two-argument form the
    # whole prompt.
    chat = Scoring([-2.0, -1.0, -3.0, -4.0])
    ErrorTypeClassifier(chat, chat=True).judge([LOGIC])  # type: ignore[arg-type]
    assert chat.calls[0]["continuations"] == ["1", "2", "3", "4"] and chat.calls[0]["messages"]
    plain = TwoArgumentScoring([-2.0, -1.0, -3.0, -4.0])
    ErrorTypeClassifier(plain).judge([LOGIC])  # type: ignore[arg-type]
    assert plain.calls == [{"prompt": prefix + prompt, "continuations": [" 1", " 2", " 3", " 4"], "prefix": "",
                            "messages": None}]
    judge = build_judge("hf:any", lambda spec: Scoring([-1.0, -2.0]))
    assert judge.judge([LOGIC])[0].label is True and judge.backend.calls[0]["continuations"] == [" 1", " 0"]


@pytest.mark.parametrize(("text", "category"), [
    (" wrong reasoning.", "wrong reasoning"), ("Irrelevant information", "irrelevant information"),
    ("It is a calculation error", "wrong calculation"), (" 3", "wrong information"), ("no idea", None),
    ("wrong information, not wrong calculation", "wrong information"),
])
def test_a_generated_answer_is_read_as_a_category(text: str, category: str | None) -> None:
    assert parse_category(text) == category


def test_summaries_count_every_category_and_rows_get_their_type() -> None:
    summary = error_type_summary(["wrong calculation", "unclassified", "wrong calculation"])
    assert summary["n"] == 3 and summary["counts"]["wrong calculation"] == 2
    assert summary["counts"]["wrong reasoning"] == 0 and summary["shares"]["unclassified"] == pytest.approx(1 / 3)
    assert error_type_summary([])["shares"]["wrong reasoning"] is None
    with pytest.raises(ValueError):
        error_type_summary(["typo"])
    judge = build_judge("arith", no_models)
    rows = [{"outcome": "success", "item": CALC, "reasoning": judge.judge([CALC])[0].to_record()},
            {"outcome": "unsuccessful", "item": REF, "reasoning": None}]
    found = attach_error_types(rows, lambda row: row["item"])
    assert rows[0]["error_type"]["category"] == "wrong calculation" and rows[1]["error_type"] is None
    assert found["n"] == 1 and found["counts"]["wrong calculation"] == 1


def test_the_classifier_takes_one_model_spec() -> None:
    with pytest.raises(UserError, match="is not a model spec; give one"):
        build_error_classifier("arith", no_models)


class GenerateOnly:
    """The real tiny backend, offered without log-probabilities (as an API backend may be)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.capabilities = frozenset(inner.capabilities) - {"logprobs"}

    def generate(self, requests: Any) -> Any:
        return self.inner.generate(requests)


def test_without_logprobs_the_classifier_reads_its_generated_text(tiny_backend: Any) -> None:
    classifier = ErrorTypeClassifier(GenerateOnly(tiny_backend))  # type: ignore[arg-type]
    assert classifier.identity["method"] == "generate" and classifier.identity["max_new_tokens"] == 8
    verdict = classifier.judge([LOGIC])[0]
    assert verdict.detail["method"] == "generate" and verdict.detail["category"] == parse_category(verdict.raw)
    assert verdict.label is (None if verdict.detail["category"] is None else True)
