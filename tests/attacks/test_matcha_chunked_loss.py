"""The MATCHA loss computed a chunk of positions at a time gives bit for bit what the one-shot formula gives.

The one-shot formula (today's before the chunking: a whole [B, m, V] log-softmax, its product with the target,
autograd keeping both, one row at a time) is kept here as the reference; values, gradients, candidate scores and
whole token attacks on a real tiny model are compared with ``torch.equal`` / ``==``, chunks forced small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from robusteval.attacks.matcha import lockstep, loss
from robusteval.attacks.matcha.loss import LossTerms, position_sums, soft_cross_entropy
from robusteval.attacks.matcha.objective import (
    MatchaObjective,
    Reference,
    _chunk_rows,
    _chunks,
    _logits,
    gradients,
    ordinary_token_ids,
    scores,
)
from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack


# ------------------------------------------------------------------ the one-shot reference (the former code)
def naive_soft_ce(logits: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    if logits.shape[-2] == 0:
        return logits.new_zeros(logits.shape[:-2])
    target = torch.softmax(reference.float(), dim=-1)
    return -(target * torch.log_softmax(logits.float(), dim=-1)).sum(dim=-1).mean(dim=-1)


def naive_terms(objective: MatchaObjective, logits: torch.Tensor) -> LossTerms:
    reference, n_answer = objective.reference_logits, objective.reference.n_answer
    start = objective.reference.answer_start - objective.scored_from
    answer = naive_soft_ce(logits[:, start : start + n_answer], reference[start : start + n_answer])
    if objective.answer_norm is not None:
        answer = answer * n_answer / objective.answer_norm
    cot = naive_soft_ce(logits[:, n_answer:], reference[n_answer:])
    return LossTerms(cot - objective.lam * answer, cot, answer)


def naive_gradients(objectives: Sequence[MatchaObjective], embeds: Sequence[torch.Tensor]
                    ) -> list[tuple[torch.Tensor, LossTerms]]:
    out: list[tuple[torch.Tensor, LossTerms]] = []
    for part in _chunks(objectives, range(len(objectives)), [q.shape[0] for q in embeds]):
        chunk = objectives[part]
        leaves = [q.detach().requires_grad_(True) for q in embeds[part]]
        with torch.enable_grad():
            logits, ms = _logits(chunk, leaves)
            rows = logits.unbind(0)
            terms = [naive_terms(o, row[None, row.shape[0] - m :]) for o, row, m in zip(chunk, rows, ms, strict=True)]
            grads = torch.autograd.grad(-torch.stack([t.total[0] for t in terms]).sum(), leaves)
        out += [(g, LossTerms(t.total.detach()[0], t.cot.detach()[0], t.answer.detach()[0]))
                for g, t in zip(grads, terms, strict=True)]
    return out


@torch.no_grad()
def naive_scores(objectives: Sequence[MatchaObjective], questions: Sequence[Any]) -> list[LossTerms]:
    out = []
    for j, batch in enumerate(questions):
        rows = [(j, c) for c in range(len(batch))]
        logits, ms = _logits([objectives[j]] * len(rows), _chunk_rows(objectives, questions, rows))
        out.append(naive_terms(objectives[j], logits[:, logits.shape[1] - ms[0]:]))
    return out


# ------------------------------------------------------------------ the loss alone
@pytest.mark.parametrize(("rows", "positions", "vocab", "chunk"), [
    (1, 7, 40_000, 80_000),  # chunks of 2 positions over a vocabulary torch reduces in parallel
    (3, 5, 40_000, 80_000),
    (2, 1, 40_000, 80_000),  # one position: rows go in pairs, never a lone output
    (1, 1, 40_000, 1),
    (4, 9, 300, 1_000),
    (2, 6, 300, 1 << 24),  # one chunk
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_position_sums_are_the_one_shot_formula_bit_for_bit(rows: int, positions: int, vocab: int, chunk: int,
                                                            dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(rows * 100 + positions)
    logits = (torch.randn(rows, positions, vocab, generator=generator) * 3).to(dtype).requires_grad_(True)
    reference = torch.randn(positions, vocab, generator=generator).to(dtype)
    weights = torch.rand(rows, generator=generator)
    expected = naive_soft_ce(logits, reference)
    (expected_grad,) = torch.autograd.grad((expected * weights).sum(), logits)
    got = -position_sums(logits, [reference] * rows, chunk_floats=chunk).mean(dim=-1)
    (got_grad,) = torch.autograd.grad((got * weights).sum(), logits)
    assert torch.equal(got, expected)
    assert torch.equal(got_grad, expected_grad)
    assert torch.equal(soft_cross_entropy(logits, reference), expected)


def test_position_sums_read_each_rows_own_reference_at_its_last_positions() -> None:
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 5, 50, generator=generator)
    first, second = torch.randn(5, 50, generator=generator), torch.randn(3, 50, generator=generator)
    sums = position_sums(logits, [first, second], chunk_floats=100)
    assert torch.equal(-sums[0].mean(), naive_soft_ce(logits[0:1], first)[0])
    assert torch.equal(sums[1, :2], torch.zeros(2))  # left padding reads 0
    assert torch.equal(-sums[1, 2:].mean(), naive_soft_ce(logits[1:2, 2:], second)[0])


def test_a_reference_longer_than_the_logits_is_refused() -> None:
    with pytest.raises(ValueError, match="a reference of 4 positions for logits of 3"):
        position_sums(torch.zeros(1, 3, 10), [torch.zeros(4, 10)])


# ------------------------------------------------------------------ the attack's primitives on a real model
@pytest.fixture(scope="module")
def objectives(tiny_backend: Any) -> list[MatchaObjective]:
    backend = tiny_backend
    prefix = backend.bos_ids + backend.encode("Q: What is 2 + 3?\nA: The answer is 5. 2 + 3 = 5.\n\n")
    head, tail = backend.encode("Q:"), backend.encode("\nA:")
    out = []
    for question, answer, chain in [
        (" Tom has 3 apples and eats 1. How many are left?", " The answer is 2.", " He had 3 and ate 1, 3 - 1 = 2."),
        (" A box holds 4 pens. How many pens do 2 boxes hold?", " The answer is 8.", " 2 boxes of 4 make 2 * 4 = 8."),
        (" Ann reads 5 pages a day for 3 days. How many pages?", " The answer is 15.", " 5 * 3 = 15 pages."),
    ]:
        continuation = backend.encode(answer + chain)
        reference = Reference(backend.encode(question), continuation, len(backend.encode(answer)))
        out.append(MatchaObjective(backend, prefix, head, tail, reference))
    return out


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of two positions (the floor: twice the vocabulary), so every path really goes in pieces."""
    monkeypatch.setattr(loss, "CHUNK_FLOATS", 1)


@pytest.mark.usefixtures("small_chunks")
def test_gradients_and_scores_are_the_one_shot_ones_bit_for_bit(objectives: list[MatchaObjective]) -> None:
    embeds = [o.embed_question([o.reference.question_ids])[0].detach() for o in objectives]
    for (grad, terms), (want, want_terms) in zip(gradients(objectives, embeds), naive_gradients(objectives, embeds),
                                                strict=True):
        assert torch.equal(grad, want)
        assert torch.equal(terms.total, want_terms.total) and torch.equal(terms.answer, want_terms.answer)
    candidates = []
    for o in objectives:
        ids = o.reference.question_ids
        candidates.append([ids, [ids[0], *ids], [*ids[:-1], ids[0]]][: 2 + len(candidates) % 2])
    # scores needs equal-length candidates per objective
    candidates = [[c for c in batch if len(c) == len(batch[0])] for batch in candidates]
    for got, want in zip(scores(objectives, candidates), naive_scores(objectives, candidates), strict=True):
        assert torch.equal(got.total, want.total) and torch.equal(got.cot, want.cot)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("n_candidates", [1, 3])
def test_token_attack_outcome_is_todays_at_batch_one(objectives: list[MatchaObjective], n_candidates: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    objective = objectives[0]
    allowed = ordinary_token_ids(objective.backend.tokenizer)
    config = TokenAttackConfig(steps=3, n_candidates=n_candidates, insert_ratio=0.3, topk_ratio=0.5)

    def attack() -> Any:
        return token_attack(objective, list(objective.reference.question_ids), allowed, config,
                            np.random.default_rng(7), lambda ids: (True, {}))

    chunked = attack()
    monkeypatch.setattr(lockstep, "gradients", naive_gradients)
    monkeypatch.setattr(lockstep, "scores", naive_scores)
    one_shot = attack()
    assert chunked.question_ids == one_shot.question_ids
    assert chunked.inserted_positions == one_shot.inserted_positions
    assert chunked.replaced_positions == one_shot.replaced_positions
    assert chunked.steps == one_shot.steps  # every loss value and proposal, as floats
    assert any(step.get("proposals") for step in chunked.steps)


def test_autograd_keeps_the_logits_alone_of_the_vocabulary_sized_tensors() -> None:
    """The one-shot loss kept its log-softmax and its target for the backward, more than the
    logits; the chunked one keeps the logits themselves and nothing else the size of the vocabulary."""
    generator = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 20, 600, generator=generator).requires_grad_(True)
    references = [torch.randn(20, 600, generator=generator), torch.randn(12, 600, generator=generator)]
    saved: list[torch.Tensor] = []

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        saved.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        chunked = -position_sums(logits, [references[0], references[0], references[1]]).mean()
    assert [t.data_ptr() for t in saved if t.shape[-1] == 600] == [logits.data_ptr()]
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        one_shot = naive_soft_ce(logits[:2], references[0]).sum() + naive_soft_ce(logits[2:, 8:], references[1]).sum()
    assert sum(t.numel() for t in saved if t.shape[-1] == 600) > logits.numel()
    assert chunked.requires_grad and one_shot.requires_grad


def test_token_vectors_are_the_scaled_matrix_rows_and_one_copy_serves_a_batch(tiny_backend: Any) -> None:
    """The one-hot gradient's rows without the [V, H] scaled copy each example used to make (671 MB each for
    Gemma 3 270M: 8 examples in lock-step held 5 GB of them)."""
    from robusteval.attacks.matcha.objective import shared_token_vectors, token_vectors

    layer = tiny_backend.embedding_layer
    ids = torch.tensor([5, 17, 3, 17])
    for scale in (1.0, 25.298221281347036):  # Gemma scales its embeddings by sqrt(hidden size)
        layer.embed_scale = scale
        try:
            whole = tiny_backend.embedding_matrix.detach() * tiny_backend.embed_scale
            assert torch.equal(token_vectors(tiny_backend, ids), whole[ids])
        finally:
            del layer.embed_scale
    allowed = ordinary_token_ids(tiny_backend.tokenizer)
    first = shared_token_vectors(tiny_backend, allowed)
    assert shared_token_vectors(tiny_backend, allowed) is first
    assert torch.equal(first, tiny_backend.embedding_matrix.detach()[allowed])
    assert shared_token_vectors(tiny_backend, allowed.clone()) is not first
