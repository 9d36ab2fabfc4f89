"""The MATCHA objective: push the chain of thought away from the reference while keeping the answer.

For the clean input x and a perturbed input x', the reference continuation (answer sentence, then CoT) is
teacher-forced after each prompt. With q = next-token distributions at the positions that predict those
continuation tokens:

* ``L_a = CE(q_a', q_a)``: mean over answer positions of ``-sum_v q_a[v] * log q_a'[v]``
* ``L_c = CE(q_c', q_c)``: the same over CoT positions (n3 .. n4)
* ``L_opt = L_c - lambda * L_a`` with ``lambda = (n4 - n3) / n4``, maximised by the attack.

Interpretation (documented choice): the paper writes q_a over "positions up to n3", i.e. prompt + answer.
Exemplar positions are identical for x and x' (causal attention, exemplars untouched), so they add a constant
with zero gradient; the question positions of x and x' have different lengths (inserted tokens) and cannot be
paired. Two normalisations of the answer term are offered (``answer_norm``):

* robusteval's default averages L_a over the positions that predict the answer tokens (a handful), which
  weighs it about two orders of magnitude more than
* the paper's mean over all n3 positions up to the answer's end: the answer positions' summed CE divided by
  n3 (the constant exemplar terms, whose gradient is zero, are left out; ``--answer-loss n3``).

n3 and n4 are absolute positions in the clean sequence (exemplars included), as in the paper's lambda.
The reference code's "cross-entropy" (class axis on positions, raw logits as targets) is *not* reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def soft_cross_entropy(logits: torch.Tensor, reference_logits: torch.Tensor) -> torch.Tensor:
    """Mean over positions of CE(softmax(reference) -> softmax(logits)); shapes [..., P, V] -> [...].

    ``reference_logits`` may have fewer leading dimensions than ``logits`` (it broadcasts)."""
    if logits.shape[-2] == 0:
        return logits.new_zeros(logits.shape[:-2])
    target = torch.softmax(reference_logits.float(), dim=-1)
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    return -(target * log_probs).sum(dim=-1).mean(dim=-1)


def loss_weight(n3: int, n4: int) -> float:
    """lambda = (n4 - n3) / n4: the CoT's share of the whole sequence."""
    if n4 <= 0 or not 0 <= n3 <= n4:
        raise ValueError(f"need 0 <= n3 <= n4 and n4 > 0, got n3={n3}, n4={n4}")
    return (n4 - n3) / n4


@dataclass(frozen=True)
class LossTerms:
    total: torch.Tensor  # L_opt, shape [B]
    cot: torch.Tensor  # L_c
    answer: torch.Tensor  # L_a


def matcha_loss(
    continuation_logits: torch.Tensor,
    reference_logits: torch.Tensor,
    n_answer: int,
    lam: float,
    answer_norm: int | None = None,
    *,
    answer_start: int = 0,
    cot_index: torch.Tensor | None = None,
) -> LossTerms:
    """L_opt for a batch.

    ``continuation_logits`` [B, m, V] and ``reference_logits`` [m, V] are the logits at the m positions that
    predict the continuation tokens; the first ``n_answer`` of them predict the answer sentence, the rest
    the CoT. ``answer_norm`` (the paper's n3) divides the answer positions' summed CE instead of their count.
    A thinking target (attacks/matcha/thinking.py): the answer's positions start at ``answer_start`` (after the
    trace), and ``cot_index`` names the CoT's positions (the trace, the chain after the answer, or both).
    """
    # The reference [m, V] broadcasts over the batch: its softmax is computed once, not once per candidate.
    end = answer_start + n_answer
    answer = soft_cross_entropy(continuation_logits[:, answer_start:end], reference_logits[answer_start:end])
    if answer_norm is not None:
        answer = answer * n_answer / answer_norm
    if cot_index is None:
        cot = soft_cross_entropy(continuation_logits[:, n_answer:], reference_logits[n_answer:])
    else:
        cot = soft_cross_entropy(continuation_logits.index_select(1, cot_index.to(continuation_logits.device)),
                                 reference_logits.index_select(0, cot_index.to(reference_logits.device)))
    return LossTerms(total=cot - lam * answer, cot=cot, answer=answer)
