"""The MATCHA token-level attack on a tiny Llama trained to answer first ("The answer is N. ...").

Invariants checked on real runs: insertion budget, edits only at inserted positions inside the question, the
original tokens kept in order, plain-word tokens, the variants' shapes, seeded determinism, the semantic gate,
and that the pure gradient pick (``n_candidates=1``) is the argmax of a one-hot gradient computed here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.attacks.matcha.token import (
    VARIANTS,
    TokenAttackConfig,
    TokenAttackResult,
    _insert,
    token_attack,
)
from robusteval.config import with_options
from robusteval.data.loaders import load_dataset
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore

PLAIN_WORD = re.compile(r" ?[A-Za-z]{2,14}")


@dataclass
class Setup:
    backend: Any
    runner: MatchaRunner
    examples: list[Any]
    clean: list[dict[str, Any]]  # attackable clean records
    allowed: torch.Tensor


def _accept_all(ids: list[int]) -> tuple[bool, dict[str, Any]]:
    return True, {"same_meaning": True}


@pytest.fixture(scope="module")
def setup(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    backend = load_backend(f"hf:{tiny_trained_dir}")
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=4, answer_type="number")
    store = RunStore.open(tmp_path_factory.mktemp("matcha_token") / "run")
    config = MatchaConfig(target_answer="clean", generation=GenerationOptions(max_new_tokens=32), steps=2, seed=0)
    runner = MatchaRunner(
        backend, store, AnswerFirstPrompt(default_exemplars("number")), config,
        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs],
    )  # fmt: skip
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert clean, "the trained tiny model should produce at least one answer + CoT to attack"
    return Setup(backend, runner, examples, clean, ordinary_token_ids(backend.tokenizer))


def _objective(setup: Setup, record: dict[str, Any], lam: float | None = None) -> MatchaObjective:
    reference = Reference(record["question_ids"], record["continuation_ids"], record["n_answer_tokens"])
    layout = setup.runner.layout(record["question"])
    return MatchaObjective(setup.backend, layout.prefix, layout.head, layout.tail, reference, lam=lam)


@pytest.fixture(scope="module")
def objective(setup: Setup) -> MatchaObjective:
    return _objective(setup, setup.clean[0])


def _run(
    setup: Setup, objective: MatchaObjective, seed: int = 0, gate: Any = _accept_all, **config: Any
) -> TokenAttackResult:
    cfg = TokenAttackConfig(**{"steps": 2, "n_candidates": 4, **config})
    return token_attack(objective, list(objective.reference.question_ids), setup.allowed, cfg,
                        np.random.default_rng(seed), gate)


def _without(ids: list[int], positions: list[int]) -> list[int]:
    drop = set(positions)
    return [t for i, t in enumerate(ids) if i not in drop]


def _check_invariants(setup: Setup, question: list[int], result: TokenAttackResult, ratio: float = 0.2) -> None:
    n_insert = max(1, round(ratio * len(question)))
    assert len(result.inserted_positions) == n_insert
    assert len(result.question_ids) == len(question) + n_insert
    assert result.inserted_positions == sorted(set(result.inserted_positions))
    assert all(0 <= p < len(result.question_ids) for p in result.inserted_positions)
    assert set(result.replaced_positions) <= set(result.inserted_positions)
    # Removing the inserted positions gives back the original question, in order.
    assert _without(result.question_ids, result.inserted_positions) == question
    allowed = set(setup.allowed.tolist())
    for position in result.inserted_positions:
        token = result.question_ids[position]
        assert token in allowed
        assert PLAIN_WORD.fullmatch(setup.backend.decode([token])), setup.backend.decode([token])


# --------------------------------------------------------------------------------------- insertion


@settings(max_examples=200, deadline=None)
@given(
    length=st.integers(min_value=1, max_value=80),
    ratio=st.sampled_from([0.05, 0.2, 0.25, 0.5, 1.0]),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    at_end=st.booleans(),
)
def test_insert_keeps_the_question_in_order(length: int, ratio: float, seed: int, at_end: bool) -> None:
    question = list(range(1000, 1000 + length))
    allowed = torch.arange(10, 20)
    n_insert = max(1, round(ratio * length))
    ids, positions = _insert(question, n_insert, allowed, np.random.default_rng(seed), at_end)
    assert len(positions) == n_insert and len(ids) == length + n_insert
    assert positions == sorted(set(positions))
    assert all(0 <= p < len(ids) and 10 <= ids[p] < 20 for p in positions)
    assert _without(ids, positions) == question
    if at_end:
        assert positions == list(range(length, length + n_insert))
    elif length >= 2:
        # Strictly inside the question: never before its first token nor after its last.
        assert ids[0] == question[0] and ids[-1] == question[-1]


def test_ordinary_tokens_are_plain_words(setup: Setup) -> None:
    tokenizer = setup.backend.tokenizer
    special = set(tokenizer.all_special_ids)
    assert len(setup.allowed) > 20
    for token in setup.allowed.tolist():
        assert token not in special
        assert PLAIN_WORD.fullmatch(setup.backend.decode([token]))
        assert not any(ch.isdigit() for ch in setup.backend.decode([token]))


# --------------------------------------------------------------------------------------- variants


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_invariants(setup: Setup, objective: MatchaObjective, variant: str) -> None:
    question = list(objective.reference.question_ids)
    result = _run(setup, objective, variant=variant)
    _check_invariants(setup, question, result)
    n = len(result.inserted_positions)
    if variant == "gcg-suffix":
        assert result.inserted_positions == list(range(len(question), len(question) + n))
        assert result.question_ids[: len(question)] == question
        for step in result.steps[:-1]:
            # One swap per step at most, and only one that improves the loss (GCG keeps the best).
            assert len(step["proposals"]) <= 1
            assert all(p["loss"] > step["loss"]["total"] for p in step["proposals"])
    else:
        assert result.inserted_positions[0] > 0 and result.inserted_positions[-1] < len(result.question_ids) - 1
    if variant == "random-insert":
        assert result.replaced_positions == []
        assert len(result.steps) == 1 and "proposals" not in result.steps[0]
        assert set(result.steps[0]["loss"]) == {"total", "cot", "answer"}
    else:
        assert len(result.steps) == 3  # two optimisation steps and the final loss
        assert [s["step"] for s in result.steps] == [0, 1, 2]
        for step in result.steps[:-1]:
            for proposal in step["proposals"]:
                assert proposal["position"] in result.inserted_positions
                assert proposal["new"] in set(setup.allowed.tolist())
        accepted = {p["position"] for s in result.steps[:-1] for p in s["proposals"] if p["accepted"]}
        assert set(result.replaced_positions) == accepted
    if variant in ("full", "cot-loss-only"):
        k = max(1, math.ceil(0.25 * n))
        for step in result.steps[:-1]:
            assert len({p["position"] for p in step["proposals"]}) <= k


def test_insert_count_on_short_and_long_questions(setup: Setup, objective: MatchaObjective) -> None:
    question = list(objective.reference.question_ids)
    for ratio in (0.01, 0.2, 0.5):
        result = _run(setup, objective, variant="random-insert", insert_ratio=ratio)
        _check_invariants(setup, question, result, ratio=ratio)


def test_every_clean_example_keeps_invariants(setup: Setup) -> None:
    for record in setup.clean[1:3]:
        objective = _objective(setup, record)
        result = _run(setup, objective, steps=1)
        _check_invariants(setup, record["question_ids"], result)


def test_unknown_variant_is_rejected(setup: Setup, objective: MatchaObjective) -> None:
    with pytest.raises(ValueError, match="variant"):
        _run(setup, objective, variant="nope")


# --------------------------------------------------------------------------------------- determinism


def test_seeded_determinism(setup: Setup, objective: MatchaObjective) -> None:
    first = _run(setup, objective, seed=7)
    second = _run(setup, objective, seed=7)
    assert first.question_ids == second.question_ids
    assert first.inserted_positions == second.inserted_positions
    assert first.replaced_positions == second.replaced_positions
    assert first.steps == second.steps
    other = _run(setup, objective, seed=8)
    assert (other.question_ids, other.inserted_positions) != (first.question_ids, first.inserted_positions)


# --------------------------------------------------------------------------------------- semantic gate


def test_rejecting_gate_keeps_the_random_insertion(setup: Setup, objective: MatchaObjective) -> None:
    calls: list[list[int]] = []

    def reject(ids: list[int]) -> tuple[bool, dict[str, Any]]:
        # The first call judges the question with its random insertions (accepted here); every replacement
        # after it is rejected.
        calls.append(list(ids))
        ok = len(calls) == 1
        return ok, {"same_meaning": ok, "judge": "reject-replacements"}

    inserted_only = _run(setup, objective, seed=3, variant="random-insert")
    result = _run(setup, objective, seed=3, gate=reject)
    assert result.question_ids == inserted_only.question_ids
    assert result.inserted_positions == inserted_only.inserted_positions
    assert result.replaced_positions == []
    proposals = [p for s in result.steps[:-1] for p in s["proposals"]]
    assert proposals, "the attack should have proposed replacements"
    assert calls[0] == inserted_only.question_ids  # the insertion itself was judged first
    assert len(calls) == 1 + len(proposals)
    assert all(not p["accepted"] and p["semantic"]["judge"] == "reject-replacements" for p in proposals)
    # Each gate call after the insertion's saw the current question with exactly one inserted token swapped.
    for ids, proposal in zip(calls[1:], proposals, strict=True):
        assert ids[proposal["position"]] == proposal["new"]
        diff = [i for i, (a, b) in enumerate(zip(ids, result.question_ids, strict=True)) if a != b]
        assert diff == [proposal["position"]]


def test_gate_sees_accepted_replacements_cumulatively(setup: Setup, objective: MatchaObjective) -> None:
    calls: list[int] = []

    def accept_first(ids: list[int]) -> tuple[bool, dict[str, Any]]:
        # Call 1 judges the insertion, call 2 the first replacement: both accepted, everything after rejected.
        calls.append(1)
        ok = len(calls) <= 2
        return ok, {"same_meaning": ok}

    result = _run(setup, objective, seed=3, gate=accept_first)
    assert len(result.replaced_positions) == 1
    _check_invariants(setup, list(objective.reference.question_ids), result)


# --------------------------------------------------------------------------------------- lambda per variant


def test_cot_loss_only_uses_lambda_zero(setup: Setup) -> None:
    record = setup.clean[0]
    example = next(e for e in setup.examples if e.id == record["id"])
    records = {}
    for variant in ("full", "cot-loss-only"):
        runner = setup.runner
        config = with_options(runner.config, {"variant": variant, "steps": 1, "max_new_tokens": 8})
        variant_runner = MatchaRunner(setup.backend, runner.store, runner.prompt, config,
                                      reasoning_judge=runner.reasoning_judge, semantic_judge=runner.semantic_judge)
        records[variant] = variant_runner.attack_one(example, record)
    full, cot_only = records["full"], records["cot-loss-only"]
    assert cot_only["lambda"] == 0.0
    assert full["lambda"] == pytest.approx((full["n4"] - full["n3"]) / full["n4"])
    assert full["lambda"] > 0
    for step in cot_only["steps"]:
        assert step["loss"]["total"] == pytest.approx(step["loss"]["cot"])
    for step in full["steps"]:
        loss = step["loss"]
        assert loss["total"] == pytest.approx(loss["cot"] - full["lambda"] * loss["answer"], rel=1e-5, abs=1e-6)
    # question_span: exactly the clean question's tokens after the prefix and "Q:".
    layout = setup.runner.layout(record["question"])
    start = len(layout.prefix) + len(layout.head)
    assert full["question_span"] == [start, start + len(record["question_ids"])]


# --------------------------------------------------------------------------------------- gradient pick


def test_single_candidate_is_the_gradient_argmax(setup: Setup, objective: MatchaObjective) -> None:
    """n_candidates=1: the replacement at each top-k position is argmin_v of d(-L_opt)/d(one-hot)[v]."""
    seed = 5
    inserted = _run(setup, objective, seed=seed, variant="random-insert")
    ids, positions = inserted.question_ids, inserted.inserted_positions
    result = _run(setup, objective, seed=seed, steps=1, n_candidates=1, topk_ratio=0.5)
    assert result.inserted_positions == positions

    # One-hot gradient over the whole vocabulary, computed here by autograd.
    backend = setup.backend
    weight = backend.embedding_matrix.detach() * backend.embed_scale
    one_hot = torch.nn.functional.one_hot(torch.tensor(ids), weight.shape[0]).to(weight.dtype)
    one_hot.requires_grad_(True)
    terms = objective.loss((one_hot @ weight).unsqueeze(0))
    (grad,) = torch.autograd.grad(-terms.total.sum(), one_hot)  # [Lq, V]
    assert result.steps[0]["loss"]["total"] == pytest.approx(float(terms.total[0].detach()), rel=1e-5)

    allowed = setup.allowed
    current = torch.tensor([float(grad[p, ids[p]]) for p in positions])
    k = max(1, math.ceil(0.5 * len(positions)))
    top_positions = [positions[int(i)] for i in current.topk(k).indices]
    best = {p: int(allowed[int(grad[p, allowed].argmin())]) for p in top_positions}
    expected = {p: t for p, t in best.items() if t != ids[p]}
    assert expected, "the gradient should suggest at least one new token"

    proposals = result.steps[0]["proposals"]
    assert {p["position"]: p["new"] for p in proposals} == expected
    final = list(ids)
    for position, token in expected.items():
        final[position] = token
    assert result.question_ids == final
    assert result.replaced_positions == sorted(expected)
