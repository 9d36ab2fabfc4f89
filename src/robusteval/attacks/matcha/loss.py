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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

#: Floats of vocabulary-sized scratch (a chunk's log-softmax, its target, their product) one chunk may hold: 16 Mi
#: (64 MiB in float32), whatever the batch, so the loss costs the logits themselves plus a constant.
CHUNK_FLOATS = 1 << 24
_HOST = torch.device("cpu")


def soft_cross_entropy(logits: torch.Tensor, reference_logits: torch.Tensor) -> torch.Tensor:
    """Mean over positions of CE(softmax(reference) -> softmax(logits)); shapes [..., P, V] -> [...].

    ``reference_logits`` may have fewer leading dimensions than ``logits`` (it broadcasts). Computed a chunk of
    positions at a time (:func:`position_sums`), bit for bit what the one-shot formula gives."""
    if logits.shape[-2] == 0:
        return logits.new_zeros(logits.shape[:-2])
    lead, (positions, vocab) = logits.shape[:-2], logits.shape[-2:]
    flat = logits.reshape(-1, positions, vocab)
    if reference_logits.dim() == 2:
        references: list[torch.Tensor] = [reference_logits] * flat.shape[0]
    else:
        references = list(reference_logits.expand(*lead, positions, vocab).reshape(-1, positions, vocab))
    return -position_sums(flat, references).reshape(*lead, positions).mean(dim=-1)


def position_sums(logits: torch.Tensor, references: Sequence[torch.Tensor], *,
                  chunk_floats: int | None = None) -> torch.Tensor:
    """``sum_v softmax(reference)[v] * log_softmax(logits)[v]`` at every position: [B, K, V] -> [B, K] (float32).

    Row b's reference ``references[b]`` [m_b, V] (m_b <= K) scores its last m_b positions (rows are left-padded);
    the positions before are padding and read 0. Rows given the same reference tensor are computed together.
    Neither the log-softmax nor the target distributions are ever whole: both forward and backward go a chunk of
    at most ``chunk_floats`` (default :data:`CHUNK_FLOATS`) at a time, the backward recomputing its chunk's log-softmax (so autograd keeps the
    logits alone). Every value and gradient is bit for bit the one-shot formula's: the same kernels run on rows
    that do not interact, and no chunk is a single row over the vocabulary unless the one-shot call is too
    (torch reduces a lone row in parallel pieces, in another order)."""
    return cast(torch.Tensor, _PositionSums.apply(logits, list(references), chunk_floats or CHUNK_FLOATS))


class _PositionSums(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, references: list[torch.Tensor], chunk_floats: int
                ) -> torch.Tensor:
        pieces = _pieces(logits.shape, references, chunk_floats)
        sums = torch.zeros(logits.shape[:2], dtype=torch.float32, device=logits.device)
        for rows, positions, reference in pieces:
            sums[rows, positions] = _sums(logits[rows, positions], reference)
        ctx.save_for_backward(logits)
        ctx.pieces = pieces
        return sums

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        (logits,) = ctx.saved_tensors
        out = torch.zeros_like(logits)
        for rows, positions, reference in ctx.pieces:
            leaf = logits[rows, positions].detach().requires_grad_(True)
            with torch.enable_grad():
                (part,) = torch.autograd.grad(_sums(leaf, reference), leaf, grad[rows, positions])
            out[rows, positions] = part
        return out, None, None


def _sums(logits: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """The one-shot formula on a chunk: [r, c, V] logits against their reference positions [c, V] -> [r, c]."""
    target = torch.softmax(reference.float(), dim=-1)
    return (target * torch.log_softmax(logits.float(), dim=-1)).sum(dim=-1)


Piece = tuple[slice, slice, torch.Tensor]


def _pieces(shape: Sequence[int], references: Sequence[torch.Tensor], chunk_floats: int) -> list[Piece]:
    """(rows, positions, the reference's rows for them) chunks of [B, K, V] logits: consecutive rows sharing one
    reference go together, each chunk at most ``chunk_floats`` (or one position of one row) and never a single
    output (one row at one position) unless its whole group is one."""
    batch, keep, vocab = shape
    if len(references) != batch:
        raise ValueError(f"{len(references)} references for {batch} rows")
    budget = max(chunk_floats, 2 * vocab)
    out: list[Piece] = []
    start = 0
    while start < batch:
        reference = references[start]
        stop = start + 1
        while stop < batch and references[stop] is reference:
            stop += 1
        m = reference.shape[0]
        if m > keep:
            raise ValueError(f"a reference of {m} positions for logits of {keep}")
        first = keep - m
        if m * vocab * (stop - start) <= budget or m == 0:
            spans = [(start, stop, 0, m)]
        elif m * vocab <= budget:
            rows = budget // (m * vocab)
            spans = [(r, min(r + rows, stop), 0, m) for r in range(start, stop, rows)]
            if m == 1 and len(spans) > 1 and spans[-1][1] - spans[-1][0] == 1:
                spans[-2:] = [(spans[-2][0], stop, 0, m)]
        else:
            width = budget // vocab
            cuts = list(range(0, m, width))
            bounds = [(c, min(c + width, m)) for c in cuts]
            if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
                bounds[-2:] = [(bounds[-2][0], m)]
            spans = [(r, r + 1, a, b) for r in range(start, stop) for a, b in bounds]
        out += [(slice(r0, r1), slice(first + a, first + b), reference[a:b]) for r0, r1, a, b in spans if b > a]
        start = stop
    return out


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


def host_terms(terms: Sequence[LossTerms]) -> list[LossTerms]:
    """``terms`` with every tensor copied to the host in ONE device-to-host transfer (one sync on a GPU, where a
    ``float()`` of each value would be one each): their values and dtypes unchanged (each widened to their common
    dtype for the copy only, which every float dtype converts to and back exactly)."""
    parts = [t for term in terms for t in (term.total, term.cot, term.answer)]
    if all(t.device == _HOST for t in parts):  # already there (a CPU model)
        return [LossTerms(term.total.detach(), term.cot.detach(), term.answer.detach()) for term in terms]
    common = parts[0].dtype
    for t in parts[1:]:
        common = torch.promote_types(common, t.dtype)
    flat = torch.cat([t.detach().reshape(-1).to(common) for t in parts]).cpu()
    out, start = [], 0
    for t in parts:
        out.append(flat[start : start + t.numel()].reshape(t.shape).to(t.dtype))
        start += t.numel()
    return [LossTerms(*out[i : i + 3]) for i in range(0, len(out), 3)]


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
    The vocabulary-sized work is :func:`position_sums` (chunked); the terms are :func:`terms_of_sums`.
    """
    # The reference [m, V] is shared by the batch: its softmax is computed once per chunk, not once per candidate.
    sums = position_sums(continuation_logits, [reference_logits] * continuation_logits.shape[0])
    return terms_of_sums(sums, n_answer, lam, answer_norm, answer_start=answer_start, cot_index=cot_index,
                         dtype=continuation_logits.dtype)


def terms_of_sums(
    sums: torch.Tensor,
    n_answer: int,
    lam: float,
    answer_norm: int | None = None,
    *,
    answer_start: int = 0,
    cot_index: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> LossTerms:
    """:func:`matcha_loss`'s terms from the per-position sums [B, m] (:func:`position_sums`); ``dtype`` is the
    logits', which an empty term's zeros take."""
    end = answer_start + n_answer
    answer = _mean_ce(sums[:, answer_start:end], dtype)
    if answer_norm is not None:
        answer = answer * n_answer / answer_norm
    if cot_index is None:
        cot = _mean_ce(sums[:, n_answer:], dtype)
    else:
        cot = _mean_ce(sums.index_select(1, cot_index.to(sums.device)), dtype)
    return LossTerms(total=cot - lam * answer, cot=cot, answer=answer)


def _mean_ce(sums: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Mean CE over positions of their sums [B, P] (:func:`soft_cross_entropy`'s last step)."""
    if sums.shape[-1] == 0:
        return sums.new_zeros(sums.shape[:-1], dtype=dtype)
    return -sums.contiguous().mean(dim=-1)
