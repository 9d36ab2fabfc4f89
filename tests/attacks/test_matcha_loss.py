"""The MATCHA loss against hand computations: soft cross-entropy, L_opt = L_c - lambda * L_a, lambda, and the
objective's position alignment on a real (tiny random) Llama checked against one plain full-sequence forward.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robusteval.attacks.matcha.loss import loss_weight, matcha_loss, soft_cross_entropy
from robusteval.attacks.matcha.objective import MatchaObjective, Reference

# Two positions x three vocabulary entries, written out explicitly.
PERTURBED = [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]
REFERENCE = [[0.2, 0.1, 2.0], [1.5, 1.5, -0.5]]


def _softmax(row: list[float]) -> list[float]:
    exps = [math.exp(v) for v in row]
    total = sum(exps)
    return [e / total for e in exps]


def _hand_ce(perturbed: list[list[float]], reference: list[list[float]]) -> float:
    """mean_t  -sum_v softmax(reference_t)[v] * log softmax(perturbed_t)[v], written out with math."""
    per_position = []
    for p_row, r_row in zip(perturbed, reference, strict=True):
        q = _softmax(r_row)
        log_p = [v - math.log(sum(math.exp(w) for w in p_row)) for v in p_row]
        per_position.append(-sum(qv * lv for qv, lv in zip(q, log_p, strict=True)))
    return sum(per_position) / len(per_position)


def _hand_entropy(rows: list[list[float]]) -> float:
    values = []
    for row in rows:
        q = _softmax(row)
        values.append(-sum(v * math.log(v) for v in q))
    return sum(values) / len(values)


# --------------------------------------------------------------------------------------- soft CE


def test_soft_cross_entropy_matches_hand_computation() -> None:
    got = soft_cross_entropy(torch.tensor(PERTURBED), torch.tensor(REFERENCE))
    assert got.shape == ()
    assert float(got) == pytest.approx(_hand_ce(PERTURBED, REFERENCE), rel=1e-6)
    # The first position by hand, digit by digit: q = softmax([.2,.1,2]), log p = [1,2,.5] - logsumexp.
    q = np.exp([0.2, 0.1, 2.0]) / np.exp([0.2, 0.1, 2.0]).sum()
    log_p = np.array([1.0, 2.0, 0.5]) - np.log(np.exp([1.0, 2.0, 0.5]).sum())
    first = float(soft_cross_entropy(torch.tensor([PERTURBED[0]]), torch.tensor([REFERENCE[0]])))
    assert first == pytest.approx(float(-(q * log_p).sum()), rel=1e-6)


def test_soft_cross_entropy_is_not_symmetric_and_takes_the_reference_as_target() -> None:
    forward = float(soft_cross_entropy(torch.tensor(PERTURBED), torch.tensor(REFERENCE)))
    backward = float(soft_cross_entropy(torch.tensor(REFERENCE), torch.tensor(PERTURBED)))
    assert forward == pytest.approx(_hand_ce(PERTURBED, REFERENCE), rel=1e-6)
    assert backward == pytest.approx(_hand_ce(REFERENCE, PERTURBED), rel=1e-6)
    assert forward != pytest.approx(backward)


def test_soft_cross_entropy_batched_and_shift_invariant() -> None:
    batch = torch.tensor([PERTURBED, REFERENCE])  # [2, 2, 3]
    got = soft_cross_entropy(batch, torch.tensor(REFERENCE).expand(2, -1, -1))
    assert got.shape == (2,)
    assert got.tolist() == pytest.approx([_hand_ce(PERTURBED, REFERENCE), _hand_entropy(REFERENCE)], rel=1e-6)
    # Softmax ignores a constant added to a row of logits (of either argument).
    shifted = soft_cross_entropy(torch.tensor(PERTURBED) + 7.0, torch.tensor(REFERENCE) - 3.0)
    assert float(shifted) == pytest.approx(_hand_ce(PERTURBED, REFERENCE), rel=1e-5)


def test_soft_cross_entropy_of_identical_logits_is_the_entropy() -> None:
    got = soft_cross_entropy(torch.tensor(REFERENCE), torch.tensor(REFERENCE))
    assert float(got) == pytest.approx(_hand_entropy(REFERENCE), rel=1e-6)
    # Gibbs: CE(p, q) >= H(q) for any p.
    assert _hand_ce(PERTURBED, REFERENCE) > _hand_entropy(REFERENCE)


def test_soft_cross_entropy_of_no_positions_is_zero() -> None:
    got = soft_cross_entropy(torch.zeros(3, 0, 5), torch.zeros(3, 0, 5))
    assert got.shape == (3,) and got.tolist() == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------------------- lambda


@pytest.mark.parametrize(
    ("n3", "n4", "expected"),
    [(3, 4, 0.25), (656, 699, 43 / 699), (0, 10, 1.0), (10, 10, 0.0), (1, 3, 2 / 3)],
)
def test_loss_weight_is_cot_share(n3: int, n4: int, expected: float) -> None:
    assert loss_weight(n3, n4) == pytest.approx(expected, rel=1e-12)
    assert loss_weight(n3, n4) == pytest.approx((n4 - n3) / n4)


@pytest.mark.parametrize(("n3", "n4"), [(5, 4), (0, 0), (-1, 4), (3, -2), (1, 0)])
def test_loss_weight_rejects_bad_positions(n3: int, n4: int) -> None:
    with pytest.raises(ValueError):
        loss_weight(n3, n4)


# --------------------------------------------------------------------------------------- L_opt


def test_matcha_loss_matches_hand_computation() -> None:
    """m = 4 continuation positions, the first one predicts the answer, the other three the CoT; batch of 2."""
    reference = [[0.2, 0.1, 2.0], [1.5, 1.5, -0.5], [0.0, 0.3, -0.2], [2.0, -1.0, 0.0]]
    row_a = [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [0.4, 0.4, 0.4], [-2.0, 1.0, 0.0]]
    row_b = [[0.2, 0.1, 2.0], [3.0, 0.0, 0.0], [1.0, -1.0, 0.5], [2.0, -1.0, 0.0]]
    lam = loss_weight(6, 9)  # = 1/3
    terms = matcha_loss(torch.tensor([row_a, row_b]), torch.tensor(reference), n_answer=1, lam=lam)
    for index, row in enumerate([row_a, row_b]):
        answer = _hand_ce(row[:1], reference[:1])
        cot = _hand_ce(row[1:], reference[1:])
        assert float(terms.answer[index]) == pytest.approx(answer, rel=1e-6)
        assert float(terms.cot[index]) == pytest.approx(cot, rel=1e-6)
        assert float(terms.total[index]) == pytest.approx(cot - answer / 3, rel=1e-6)


def test_matcha_loss_at_the_reference_is_entropy_difference() -> None:
    """Identical logits: L_c = H(CoT reference), L_a = H(answer reference), L_opt = H_c - lambda * H_a."""
    reference = [[0.2, 0.1, 2.0], [1.5, 1.5, -0.5], [0.0, 0.3, -0.2], [2.0, -1.0, 0.0], [0.0, 0.0, 0.0]]
    lam = 0.4
    terms = matcha_loss(torch.tensor([reference]), torch.tensor(reference), n_answer=2, lam=lam)
    h_a, h_c = _hand_entropy(reference[:2]), _hand_entropy(reference[2:])
    assert float(terms.answer[0]) == pytest.approx(h_a, rel=1e-6)
    assert float(terms.cot[0]) == pytest.approx(h_c, rel=1e-6)
    assert float(terms.total[0]) == pytest.approx(h_c - lam * h_a, rel=1e-6)
    # The uniform last row has entropy log 3.
    assert _hand_entropy(reference[-1:]) == pytest.approx(math.log(3))


def test_matcha_loss_edge_splits() -> None:
    reference = torch.tensor([REFERENCE])[0]
    perturbed = torch.tensor([PERTURBED])
    only_cot = matcha_loss(perturbed, reference, n_answer=0, lam=0.7)
    assert float(only_cot.answer[0]) == 0.0
    assert float(only_cot.total[0]) == pytest.approx(_hand_ce(PERTURBED, REFERENCE), rel=1e-6)
    only_answer = matcha_loss(perturbed, reference, n_answer=2, lam=0.7)
    assert float(only_answer.cot[0]) == 0.0
    assert float(only_answer.total[0]) == pytest.approx(-0.7 * _hand_ce(PERTURBED, REFERENCE), rel=1e-6)


# --------------------------------------------------------------------------------------- toy model


@pytest.fixture(scope="module")
def toy(tiny_backend):  # type: ignore[no-untyped-def]
    backend = tiny_backend
    prefix_ids = backend.bos_ids + backend.encode("Q: What is 2 + 3?\nA: The answer is 5. 2 + 3 = 5.\n\n")
    head_ids = backend.encode("Q:")
    tail_ids = backend.encode("\nA:")
    question_ids = backend.encode(" Tom has 3 apples and eats 1. How many are left?")
    continuation_ids = backend.encode(" The answer is 2. He had 3 and ate 1, 3 - 1 = 2.")
    n_answer = len(backend.encode(" The answer is 2."))
    reference = Reference(question_ids, continuation_ids, n_answer)
    objective = MatchaObjective(backend, prefix_ids, head_ids, tail_ids, reference)
    return backend, objective, prefix_ids, head_ids, tail_ids, reference


def _continuation_logits(backend, ids_before: list[int], continuation: list[int]) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """Run the model on the whole sequence at once (no cache) and keep the logits that predict the continuation."""
    full = torch.tensor([ids_before + continuation])
    with torch.no_grad():
        logits = backend.model(input_ids=full).logits[0].float()
    start = len(ids_before)
    # logits[t] predicts token t + 1: continuation token j sits at start + j, predicted at start + j - 1.
    return logits[start - 1 : start - 1 + len(continuation)]


def test_objective_positions_and_lambda(toy) -> None:  # type: ignore[no-untyped-def]
    _, objective, prefix_ids, head_ids, tail_ids, reference = toy
    before = len(prefix_ids) + len(head_ids) + len(reference.question_ids) + len(tail_ids)
    assert objective.n3 == before + reference.n_answer
    assert objective.n4 == before + len(reference.continuation_ids)
    assert objective.lam == pytest.approx((objective.n4 - objective.n3) / objective.n4)
    assert 0 < objective.lam < 1
    assert objective.m == len(reference.continuation_ids)


def test_objective_clean_loss_matches_full_sequence_forward(toy) -> None:  # type: ignore[no-untyped-def]
    backend, objective, prefix_ids, head_ids, tail_ids, reference = toy
    before = prefix_ids + head_ids + reference.question_ids + tail_ids
    logits = _continuation_logits(backend, before, reference.continuation_ids)
    assert torch.allclose(objective.reference_logits.float(), logits, atol=1e-4, rtol=1e-4)

    probs = torch.softmax(logits.double(), dim=-1)
    entropy = -(probs * torch.log(probs)).sum(-1)  # per position
    h_a = float(entropy[: reference.n_answer].mean())
    h_c = float(entropy[reference.n_answer :].mean())
    n3 = len(before) + reference.n_answer
    n4 = len(before) + len(reference.continuation_ids)
    lam = (n4 - n3) / n4
    with torch.no_grad():
        terms = objective.loss(objective.embed_question([reference.question_ids]))
    assert float(terms.answer[0]) == pytest.approx(h_a, rel=1e-4)
    assert float(terms.cot[0]) == pytest.approx(h_c, rel=1e-4)
    assert float(terms.total[0]) == pytest.approx(h_c - lam * h_a, rel=1e-4, abs=1e-4)


def test_objective_perturbed_loss_matches_full_sequence_forward(toy) -> None:  # type: ignore[no-untyped-def]
    """A longer (inserted-token) question shifts every later position; the loss must follow the shift."""
    backend, objective, prefix_ids, head_ids, tail_ids, reference = toy
    clean_before = prefix_ids + head_ids + reference.question_ids + tail_ids
    ref_probs = torch.softmax(_continuation_logits(backend, clean_before, reference.continuation_ids).double(), -1)
    q = reference.question_ids
    perturbed_a = q[:3] + backend.encode(" purple banana") + q[3:]
    perturbed_b = q[:5] + backend.encode(" yes") + q[5:]
    for perturbed in (perturbed_a, perturbed_b):
        logits = _continuation_logits(backend, prefix_ids + head_ids + perturbed + tail_ids,
                                      reference.continuation_ids)
        log_p = torch.log_softmax(logits.double(), -1)
        ce = -(ref_probs * log_p).sum(-1)
        answer = float(ce[: reference.n_answer].mean())
        cot = float(ce[reference.n_answer :].mean())
        with torch.no_grad():
            terms = objective.loss(objective.embed_question([perturbed]))
        assert float(terms.answer[0]) == pytest.approx(answer, rel=1e-4)
        assert float(terms.cot[0]) == pytest.approx(cot, rel=1e-4)
        # lambda stays the clean sequence's (n4 - n3) / n4.
        assert float(terms.total[0]) == pytest.approx(cot - objective.lam * answer, rel=1e-4, abs=1e-4)
    # Batched candidate scoring agrees with the one-at-a-time loss (equal-length rows).
    perturbed_c = q[:4] + backend.encode(" yes") + q[4:]
    batch = objective.losses([perturbed_b, perturbed_c])
    with torch.no_grad():
        single = [float(objective.loss(objective.embed_question([p])).total[0]) for p in (perturbed_b, perturbed_c)]
    assert batch.tolist() == pytest.approx(single, rel=1e-4, abs=1e-5)


def test_objective_lambda_override_and_gradient_sign(toy) -> None:  # type: ignore[no-untyped-def]
    backend, objective, prefix_ids, head_ids, tail_ids, reference = toy
    cot_only = MatchaObjective(backend, prefix_ids, head_ids, tail_ids, reference, lam=0.0)
    assert cot_only.lam == 0.0
    with torch.no_grad():
        terms = cot_only.loss(cot_only.embed_question([reference.question_ids]))
    assert float(terms.total[0]) == pytest.approx(float(terms.cot[0]))
    # embedding_gradient returns d(-L_opt)/dE: a small step against it raises L_opt, along it lowers it.
    q = reference.question_ids
    perturbed = q[:3] + backend.encode(" purple banana") + q[3:]
    grad, at = objective.embedding_gradient(perturbed)
    embeds = objective.embed_question([perturbed])[0].detach()
    assert grad.shape == embeds.shape
    direction = grad / grad.norm()
    with torch.no_grad():
        up = float(objective.loss((embeds - 1e-2 * direction).unsqueeze(0)).total[0])
        down = float(objective.loss((embeds + 1e-2 * direction).unsqueeze(0)).total[0])
    assert up > float(at.total) > down
    # At the clean input the cross-entropies sit at their minimum (softmax(z) - q = 0): the gradient vanishes.
    clean_grad, _ = objective.embedding_gradient(q)
    assert float(clean_grad.norm()) < 1e-3 * float(grad.norm())
