"""Judge specs, OR/vote combinations, and the verdict cache in a run store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from robusteval.errors import UserError
from robusteval.judges import (
    JUDGE_STAGE,
    AllMustPass,
    ArithmeticJudge,
    CachedJudge,
    MajorityVote,
    ReasoningItem,
    ReasoningJudge,
    SemanticItem,
    Verdict,
    build_judge,
    register_judge,
    with_cache,
)
from robusteval.judges.base import check_judge_spec
from robusteval.models.base import Capabilities
from robusteval.store import RunStore

GOOD = ReasoningItem("q", "The answer is 8. 5 + 3 = 8.", "The answer is 8. 5 + 3 = 8.")
BAD_ARITH = ReasoningItem("q", "The answer is 8. 5 + 3 = 8.", "The answer is 8. 5 + 3 = 9.")


class Fixed:
    """A scripted reasoning judge, for testing the combination rules themselves."""

    task = "reasoning"
    deterministic = True

    def __init__(self, name: str, labels: Sequence[bool | None]):
        self.name = name
        self.labels = list(labels)

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        return [Verdict(label, self.name, repr(label)) for label, _ in zip(self.labels, items, strict=False)]


class Counting:
    """The real backend, with its log-prob calls counted."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.declared = Capabilities(frozenset(inner.capabilities), scores_in_context=True)  # passes prefix= on
        self.calls = 0

    def generate(self, requests: Any) -> Any:
        return self.inner.generate(requests)

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "") -> list[float]:
        self.calls += 1
        return self.inner.continuation_logprobs(prompt, continuations, prefix=prefix)


T, F, U = True, False, None
ITEMS4 = [GOOD] * 4


def test_all_must_pass_is_or_on_wrong() -> None:
    combo = AllMustPass([Fixed("a", [T, F, T, U]), Fixed("b", [T, T, F, T])])
    verdicts = combo.judge(ITEMS4)
    assert [v.label for v in verdicts] == [T, F, F, T]  # an abstaining member is left out
    assert combo.name == "a+b"
    assert [m["judge"] for m in verdicts[1].detail["members"]] == ["a", "b"]
    assert verdicts[1].raw == "a: no; b: yes"
    assert verdicts[3].raw == "a: abstained; b: yes"


@pytest.mark.parametrize(
    ("a", "b", "label"),
    [
        (T, T, T), (T, F, F), (F, T, F), (F, F, F),
        (U, T, T), (T, U, T), (U, F, F), (F, U, F),
        (U, U, U),
    ],
)
def test_all_must_pass_truth_table(a: bool | None, b: bool | None, label: bool | None) -> None:
    class Abstaining(Fixed):
        def judge(self, items: Sequence[Any]) -> list[Verdict]:
            return [Verdict.abstain(self.name, "", f"{self.name} had nothing") if v.label is None else v
                    for v in super().judge(items)]

    (verdict,) = AllMustPass([Abstaining("a", [a]), Abstaining("b", [b])]).judge([GOOD])
    assert verdict.label is label
    if label is None:
        assert verdict.abstain_reason == "all members abstained: a: a had nothing; b: b had nothing"
    else:
        assert verdict.abstain_reason is None and "abstained" not in verdict.detail


def test_arith_without_an_equation_leaves_the_other_judge_to_decide() -> None:
    prose = ReasoningItem("q", "r", "The answer is 44. The 28 cones are shablo's 60 pages to school.")
    yes, no = Fixed("yes", [T]), Fixed("no", [F])
    assert AllMustPass([ArithmeticJudge(), yes]).judge([prose])[0].label is True
    assert AllMustPass([ArithmeticJudge(), no]).judge([prose])[0].label is False
    both = AllMustPass([ArithmeticJudge(), ArithmeticJudge()]).judge([prose])[0]
    assert both.label is None
    assert both.abstain_reason == "all members abstained: arith: no equation to check"


def test_majority_vote_with_abstentions_and_ties() -> None:
    vote = MajorityVote([Fixed("a", [T, F, T, U]), Fixed("b", [T, F, F, U]), Fixed("c", [F, T, U, U])])
    verdicts = vote.judge(ITEMS4)
    assert [v.label for v in verdicts] == [T, F, U, U]  # 2-1, 1-2, 1-1 tie, nobody answered
    assert verdicts[2].detail["yes"] == 1 and verdicts[2].detail["no"] == 1
    assert verdicts[2].abstain_reason == "tie (1 yes, 1 no)"
    assert verdicts[3].abstain_reason is not None and verdicts[3].abstain_reason.startswith("all members abstained")
    assert verdicts[0].abstain_reason is None
    assert vote.name == "vote(a,b,c)"
    even = MajorityVote([Fixed("a", [T]), Fixed("b", [F]), Fixed("c", [T]), Fixed("d", [F])]).judge([GOOD])[0]
    assert even.label is None and even.abstain_reason == "tie (2 yes, 2 no)"


def test_combinations_refuse_mixed_roles() -> None:
    semantic = build_judge("none", lambda s: None, task="semantic")  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="different kinds"):
        AllMustPass([ArithmeticJudge(), semantic])


def test_spec_grammar(tiny_llama_dir: Path, tiny_backend: Any) -> None:
    model = f"hf:{tiny_llama_dir}"
    loaded: list[str] = []

    def loader(spec: str) -> Any:
        loaded.append(spec)
        return tiny_backend

    assert isinstance(build_judge("arith", loader), ArithmeticJudge)
    combo = build_judge(f"arith+{model}", loader)
    assert isinstance(combo, AllMustPass)
    assert [type(m) for m in combo.members] == [ArithmeticJudge, ReasoningJudge]
    vote = build_judge(f"vote:{model},{model},arith", loader)
    assert isinstance(vote, MajorityVote) and len(vote.members) == 3
    both = build_judge(f"arith+vote:{model},{model},{model}", loader)
    assert isinstance(both, AllMustPass) and isinstance(both.members[1], MajorityVote)
    assert both.name == f"arith+vote(llm:{model},llm:{model},llm:{model})"
    # Each distinct model spec is loaded once per build.
    assert loaded == [model, model, model]


def test_plus_and_comma_inside_a_model_spec_do_not_split(tiny_backend: Any) -> None:
    loaded: list[str] = []

    def loader(spec: str) -> Any:
        loaded.append(spec)
        return tiny_backend

    build_judge("hf:/models/a+b,c+arith", loader)
    assert loaded == ["hf:/models/a+b,c"]
    build_judge("openai:gpt-4o@http://127.0.0.1:8000/v1+hf:/m", loader)
    assert loaded[1:] == ["openai:gpt-4o@http://127.0.0.1:8000/v1", "hf:/m"]


@pytest.mark.parametrize(
    ("spec", "task", "message"),
    [
        ("", "reasoning", "empty judge spec"),
        ("gpt4", "reasoning", "unknown judge 'gpt4'"),
        ("none", "reasoning", "only a semantic judge"),
        ("arith", "semantic", "checks reasoning only"),
        ("vote:arith", "reasoning", "at least two"),
        ("arith+", "reasoning", r"unknown judge 'arith\+'"),
        ("vote:arith,vote:arith,arith", "reasoning", "nested"),
    ],
)
def test_bad_specs_fail_with_a_sentence(spec: str, task: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        build_judge(spec, lambda s: pytest.fail("nothing should load"), task=task)
    with pytest.raises(UserError, match=message):  # the same refusal before any run directory is made
        check_judge_spec(spec, task=task)


def test_registered_judges_join_the_grammar() -> None:
    @register_judge("always-wrong-test")
    def _factory(task: str, spec: str, load: Any) -> Any:
        return Fixed("always-wrong-test", [False] * 10)

    judge = build_judge("arith+always-wrong-test", lambda s: None)  # type: ignore[arg-type,return-value]
    assert [v.label for v in judge.judge([GOOD, BAD_ARITH])] == [False, False]
    assert build_judge("vote:arith,arith,always-wrong-test", lambda s: None).judge([GOOD])[0].label is True  # type: ignore[arg-type,return-value]


def test_arith_or_llm_on_the_real_model(tiny_llama_dir: Path, tiny_backend: Any) -> None:
    judge = build_judge(f"arith+hf:{tiny_llama_dir}", lambda s: tiny_backend)
    llm_only = build_judge(f"hf:{tiny_llama_dir}", lambda s: tiny_backend)
    combined, llm = judge.judge([GOOD, BAD_ARITH]), llm_only.judge([GOOD, BAD_ARITH])
    assert combined[1].label is False  # the false equation decides, whatever the model says
    assert combined[0].label is llm[0].label  # arith passes GOOD, so the model decides


def test_cache_never_asks_twice(tmp_path: Path, tiny_llama_dir: Path, tiny_backend: Any) -> None:
    counting = Counting(tiny_backend)
    spec = f"hf:{tiny_llama_dir}"
    items = [GOOD, BAD_ARITH, GOOD]  # a duplicate is asked once
    with RunStore.open(tmp_path / "run") as store:
        judge = with_cache(build_judge(spec, lambda s: counting), store)
        assert isinstance(judge, CachedJudge)
        first = judge.judge(items, example_id="ex1")
        assert counting.calls == 2  # one log-prob call per distinct item
        records = store.records(JUDGE_STAGE)
        assert len(records) == 2
        assert records[0]["judge"] == f"llm:{tiny_backend.name}"
        assert records[0]["identity"]["prompt_sha256"] and records[0]["identity"]["method"] == "logprobs"
        assert records[0]["item"]["candidate"] == GOOD.candidate
        assert records[0]["verdict"]["raw"] == first[0].raw
    # A resumed run (new process, same directory) gets the same verdicts without asking the model.
    with RunStore.open(tmp_path / "run") as store:
        judge = with_cache(build_judge(spec, lambda s: counting), store)
        again = judge.judge(items)
        assert counting.calls == 2
        assert [v.to_record() for v in again] == [v.to_record() for v in first]
        judge.judge([ReasoningItem("q2", "r", "c")])
        assert counting.calls == 3  # only the new item


def test_cache_inside_combinations(tmp_path: Path, tiny_llama_dir: Path, tiny_backend: Any) -> None:
    counting = Counting(tiny_backend)
    spec = f"arith+vote:hf:{tiny_llama_dir},hf:{tiny_llama_dir}"
    with RunStore.open(tmp_path / "run") as store:
        judge = with_cache(build_judge(spec, lambda s: counting), store)
        assert isinstance(judge, AllMustPass) and isinstance(judge.members[0], ArithmeticJudge)  # arith: free, not stored
        vote = judge.members[1]
        assert isinstance(vote, MajorityVote) and all(isinstance(m, CachedJudge) for m in vote.members)
        first = judge.judge([GOOD, BAD_ARITH])
        assert counting.calls == 2  # both vote members share one identity, so the second is a cache hit
        assert len(store.records(JUDGE_STAGE)) == 2
        second = with_cache(build_judge(spec, lambda s: counting), store).judge([GOOD, BAD_ARITH])
        assert counting.calls == 2
        assert [v.label for v in second] == [v.label for v in first]
        assert first[1].label is False


def test_cache_keys_separate_roles_and_items(tmp_path: Path, tiny_backend: Any) -> None:
    with RunStore.open(tmp_path / "run") as store:
        reasoning = CachedJudge(ReasoningJudge(tiny_backend), store)
        semantic = with_cache(build_judge("hf:x", lambda s: tiny_backend, task="semantic"), store)
        assert isinstance(semantic, CachedJudge)
        assert reasoning.key(GOOD) != reasoning.key(BAD_ARITH)
        assert semantic.key(SemanticItem("a", "b")) != semantic.key(SemanticItem("b", "a"))
        assert reasoning.identity != semantic.identity


def test_the_cached_compute_holds_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Ray worker is sent: the inner judge and plain values, not the CachedJudge and its store snapshot."""
    import robusteval.runner

    sent: list[Any] = []
    real = robusteval.runner.compute_units

    def capture(store: Any, stage: str, units: Any, keys: Any, compute: Any, **options: Any) -> Any:
        sent.append(compute)
        return real(store, stage, units, keys, compute, **options)

    monkeypatch.setattr(robusteval.runner, "compute_units", capture)
    inner = Fixed("scripted", [True, False])
    with RunStore.open(tmp_path / "run") as store:
        judge = CachedJudge(inner, store)
        assert [v.label for v in judge.judge([GOOD, BAD_ARITH])] == [True, False]
    (compute,) = sent
    held = [cell.cell_contents for cell in compute.__closure__ or ()]
    assert inner in held
    assert not [x for x in held if isinstance(x, RunStore | CachedJudge)]
