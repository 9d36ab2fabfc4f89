"""MATCHA token-level attack and its baselines (one file, dataclass config and result).

1. Insert ``round(a * |question|)`` ordinary-word tokens at random positions inside the question. The semantic
   judge must accept the question with its insertions; a rejected draw is drawn again (``max_redraws``), then
   the example is skipped with the reason.
2. ``steps`` times: take the one-hot gradient of -L_opt at the inserted positions, pick the top-k positions
   by the gradient at their current token, and for each the replacement with the best gradient score
   (``n_candidates > 1`` re-scores the best few by the true loss in one batched forward, which can only
   help). A semantic judge must accept each replacement, else it is rejected.
   Under --count authors the positions are by default those the authors' code picks (:func:`authors_positions`:
   their gather by position, ``int(k x inserted)``); ``replacement_positions="corrected"`` keeps ours.

Variants: ``full``; ``random-insert`` (step 1 only); ``random-locs`` (random inserted positions instead of
top-k); ``cot-loss-only`` (lambda = 0, set by the caller through the objective); ``gcg-suffix`` (the same
token budget as a suffix at the end of the question, optimised GCG-style: batched random single swaps from
the top gradient candidates, keep the best).

Success checkpoints (``success_check``): ``final`` judges the example once, from the question after the last step
(the paper's text); ``insertion-and-final`` also generates and judges right after the accepted insertions, as
the authors' implementation (which produced the published tables) does: an example whose answer the insertions
already change, or whose reasoning they already break, is decided there, without any gradient step
(``decided_at="insertion"``). ``random-insert`` has only the one checkpoint either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from robusteval.attacks.matcha.authors import authors_insertions, insertion_count
from robusteval.attacks.matcha.lockstep import (
    AttackSteps,
    Checkpoint,
    Gate,
    Gradient,
    LeadingGradient,
    Score,
    run_lockstep,
)
from robusteval.attacks.matcha.loss import LossTerms
from robusteval.attacks.matcha.objective import (
    MatchaObjective,
    shared_host_ids,
    shared_token_vectors,
    token_vectors,
)
from robusteval.attacks.matcha.settings import (
    INSERT_RATIO,
    MAX_REDRAWS,
    N_CANDIDATES,
    STEPS,
    SUCCESS_CHECK,
    TOPK_RATIO,
    VARIANTS,
)

#: Called with the perturbed question text; returns (accepted, verdict record).
SemanticGate = Callable[[list[int]], tuple[bool, dict[str, Any]]]


@dataclass(frozen=True)
class TokenAttackConfig:
    # The values MatchaConfig resolves to (one table of defaults, attacks/matcha/settings.py): the pipeline
    # builds this record from it; a notebook calling the token attack directly gets the same defaults.
    variant: str = "full"
    insert_ratio: float = INSERT_RATIO  # a
    topk_ratio: float = TOPK_RATIO  # k as a fraction of the inserted tokens
    steps: int = STEPS  # j
    n_candidates: int = N_CANDIDATES  # tokens re-scored per chosen position (1 = the paper's pick)
    max_redraws: int = MAX_REDRAWS  # insertions drawn again when the semantic judge rejects them
    # "final": judged once, after the last step (the paper's text); "insertion-and-final": also right after the
    # insertions, stopping there on a success or a changed answer (the authors' implementation)
    success_check: str = SUCCESS_CHECK
    # "words": round(a x |question|) plain-word tokens at once, at word boundaries inside the question (ours);
    # "authors": one whole-vocabulary token at a time over question and trigger, gated each (attacks/matcha/authors.py)
    insertion: str = "words"
    trigger_tokens: int = 0  # "authors": how many trailing tokens of the edited span are the answer trigger
    first_slot: int = 0  # "authors": the first span index they may insert before (authors.first_slot)
    # What a replacement is gated against: "original" (the original question, ours); under the authors'
    # insertions "authors" (their code: the span before the step against itself) or "corrected" (the span
    # before the step against the span with the replacement); see authors.REPLACEMENT_GATES
    replacement_gate: str = "original"
    # Which inserted positions a step replaces (config.REPLACEMENT_POSITIONS): "corrected" (robusteval's, also
    # outside --count authors: ranked by the gradient at each one's current token, ceil(k x inserted)) or
    # "authors" (their gather by position, int(k x inserted) at least 1: :func:`authors_positions`)
    replacement_positions: str = "corrected"


@dataclass
class TokenAttackResult:
    question_ids: list[int]
    inserted_positions: list[int]  # indices into question_ids that hold inserted tokens
    replaced_positions: list[int]  # inserted positions whose token was replaced at least once
    steps: list[dict[str, Any]] = field(default_factory=list)  # per step: loss terms, proposals, verdicts
    insertions: list[dict[str, Any]] = field(default_factory=list)  # every insertion drawn and its verdict
    skipped: str | None = None  # why nothing was attacked (every insertion rejected)
    decided_at: str = "final"  # the checkpoint whose generation decides the outcome: "insertion" or "final"


def word_boundaries(decode: Callable[[list[int]], str], ids: Sequence[int]) -> list[int]:
    """Indices i (1 <= i < len(ids)) where token i starts a new word or a punctuation mark: the slots where an
    inserted word lands between words instead of splitting one (``T noto cl`` from "Tom" in a small
    vocabulary). Found from the decoded text, so it holds for every tokenizer family."""
    text = decode(list(ids))
    ends = [len(decode(list(ids[: i + 1]))) for i in range(len(ids))]
    slots = []
    for i in range(1, len(ids)):
        start = min(ends[i - 1], len(text) - 1)
        before, first = text[start - 1] if start > 0 else " ", text[start] if start < len(text) else " "
        if first.isspace() or before.isspace() or not first.isalnum() or not before.isalnum():
            slots.append(i)
    return slots


def _insert(
    question_ids: list[int], n_insert: int, allowed: Sequence[int], rng: np.random.Generator, at_end: bool,
    slots: Sequence[int] | None = None,
) -> tuple[list[int], list[int]]:
    """``n_insert`` random allowed tokens at random slots (``slots``: the allowed insertion points, default
    every point strictly inside the question), or appended for the suffix baseline."""
    tokens = [int(allowed[i]) for i in rng.integers(0, len(allowed), size=n_insert)]
    if at_end:
        start = len(question_ids)
        return question_ids + tokens, list(range(start, start + n_insert))
    if slots:
        chosen = sorted(int(slots[i]) for i in rng.integers(0, len(slots), size=n_insert))
    else:
        # Slots between tokens, strictly inside the question when it has at least two tokens.
        low, high = (1, len(question_ids)) if len(question_ids) >= 2 else (0, len(question_ids) + 1)
        chosen = sorted(int(s) for s in rng.integers(low, max(high, low + 1), size=n_insert))
    slots = chosen
    out: list[int] = []
    positions: list[int] = []
    cursor = 0
    for original_index, token in enumerate([*question_ids, None]):
        while cursor < len(slots) and slots[cursor] == original_index:
            positions.append(len(out))
            out.append(tokens[cursor])
            cursor += 1
        if token is not None:
            out.append(token)
    return out, positions


def token_attack(
    objective: MatchaObjective,
    question_ids: list[int],
    allowed: torch.Tensor,
    config: TokenAttackConfig,
    rng: np.random.Generator,
    semantic_gate: SemanticGate,
    slots: Sequence[int] | None = None,
    checkpoint: Callable[[list[int]], str | None] | None = None,
) -> TokenAttackResult:
    """The token attack on one example (:func:`token_attack_steps` driven alone); ``checkpoint`` answers the
    insertion checkpoint of ``success_check="insertion-and-final"``."""
    steps = token_attack_steps(objective, question_ids, allowed, config, rng, slots)
    check = (lambda asked: [checkpoint(ids) for _, ids in asked]) if checkpoint is not None else None
    return run_lockstep([objective], [steps], gate=lambda asked: [semantic_gate(g.ids) for _, g in asked],
                        check=check)[0]


def token_attack_steps(
    objective: MatchaObjective,
    question_ids: list[int],
    allowed: torch.Tensor,
    config: TokenAttackConfig,
    rng: np.random.Generator,
    slots: Sequence[int] | None = None,
) -> AttackSteps[TokenAttackResult]:
    """The token attack on one example, as lock-step steps (:mod:`.lockstep`): it yields its semantic gates,
    gradients and candidate scores and receives their answers."""
    if config.variant not in VARIANTS:
        raise ValueError(f"unknown variant {config.variant!r}; choose from {', '.join(VARIANTS)}")
    decode = objective.backend.decode
    allowed_ids = shared_host_ids(allowed)  # sampled on the host; the tensor goes where the scores are
    if config.insertion == "authors":
        n_insert = insertion_count(config.insert_ratio, len(question_ids) - config.trigger_tokens,
                                   config.trigger_tokens, config.first_slot)
        ids, inserted, draws = yield from authors_insertions(list(question_ids), n_insert, allowed_ids, rng,
                                                             config.max_redraws, decode, config.first_slot)
        if not inserted:
            return TokenAttackResult(list(question_ids), [], [], insertions=draws,
                                     skipped=f"the semantic judge rejected all {len(draws)} random insertions")
    else:
        n_insert = max(1, round(config.insert_ratio * len(question_ids)))
        draws = []
        for _ in range(config.max_redraws + 1):
            ids, inserted = _insert(question_ids, n_insert, allowed_ids, rng,
                                    at_end=config.variant == "gcg-suffix", slots=slots)
            accepted, verdict = yield Gate(ids)
            tokens = [ids[p] for p in inserted]
            # Each token's own text, so a report names the edits without a tokenizer.
            draws.append({"inserted_positions": inserted, "tokens": tokens,
                          "token_texts": [decode([t]) for t in tokens], "accepted": accepted, "semantic": verdict})
            if accepted:
                break
        else:
            return TokenAttackResult(list(question_ids), [], [], insertions=draws,
                                     skipped=f"the semantic judge rejected all {len(draws)} random insertions")
    result = TokenAttackResult(ids, inserted, [], insertions=draws)
    if config.variant == "random-insert":
        result.steps.append({"step": 0, "loss": _loss_record((yield Score([ids])))})
        return result
    if config.success_check == "insertion-and-final":
        decided = yield Checkpoint(ids)
        if decided is not None:  # the insertions alone broke the reasoning, or changed the answer
            result.decided_at = "insertion"
            result.steps.append({"step": 0, "checkpoint": decided, "loss": _loss_record((yield Score([ids])))})
            return result

    # The scaled embeddings of the allowed tokens [A, H], one copy shared by every example attacked with them.
    allowed_vectors = shared_token_vectors(objective.backend, allowed)
    # On the embeddings' device: top-k indices computed there index it (a host tensor would fail on CUDA).
    allowed = allowed.to(allowed_vectors.device)
    k = max(1, math.ceil(config.topk_ratio * len(inserted)))
    theirs = config.replacement_positions == "authors" and config.variant in ("full", "cot-loss-only")
    if theirs and config.steps > 0:
        # Their gather reads one entry of the one-hot gradient per location: authors_positions indexes those rows
        # of the (unscaled) matrix itself, so no [V, H] copy is made per example.
        embedding_matrix = objective.backend.embedding_matrix.detach()
        # Their locations: the greedy diff of the clean and the perturbed whole (span + response), absolute.
        offset = len(objective.prefix_ids) + len(objective.head_ids)
        rest = [*objective.tail_ids, *objective.reference.continuation_ids]
        locations = [offset + p for p in authors_locations([*question_ids, *rest], [*ids, *rest])]
        if max(locations) >= embedding_matrix.shape[0]:
            return TokenAttackResult(list(question_ids), [], [], insertions=draws, skipped=(
                f"the authors' replacement positions read the gradient at vocabulary id {max(locations)} (an "
                f"inserted token's position), past the model's {embedding_matrix.shape[0]} ids: their code fails "
                "there (--replacement-positions corrected does without that gather)"))
    replaced: set[int] = set()
    for step in range(config.steps):
        before = list(ids)  # the span as the step found it (the authors' gates compare with it)
        grad, terms = yield Gradient(ids)
        record: dict[str, Any] = {
            "step": step,
            "loss": {"total": float(terms.total), "cot": float(terms.cot), "answer": float(terms.answer)},
            "proposals": [],
        }
        if theirs:
            lead = yield LeadingGradient(ids, len(locations))
            chosen_at = [p - offset for p in authors_positions(lead, embedding_matrix, locations, config.topk_ratio,
                                                                    objective.backend.embed_scale)]
            # A location past the span (their diff can attribute an insertion to the response) edits no prompt.
            rows = [p for p in chosen_at if 0 <= p < len(ids)]
            record["replacement_positions"] = chosen_at
        else:
            rows = list(inserted)
        ranks = config.variant not in ("gcg-suffix", "random-locs") and not theirs  # then rows are the inserted
        # The rows, and (to rank them) their current tokens, sent to the device in one copy (each copy a sync).
        sent = torch.tensor([*rows, *([ids[p] for p in inserted] if ranks else [])], dtype=torch.long)
        sent = sent.to(grad.device)
        positions = sent[: len(rows)]
        # One-hot gradient restricted to the scored rows/columns: g[i, v] = grad_i . e_v
        scores = grad[positions] @ allowed_vectors.T.to(grad.dtype)  # [rows, A]
        candidate_count = min(config.n_candidates, scores.shape[1])
        # Most negative gradient of -L_opt = largest first-order increase of L_opt.
        best_tokens = allowed[(-scores).topk(candidate_count, dim=1).indices]  # [rows, C]
        order = None
        if ranks:
            current = token_vectors(objective.backend, sent[len(rows) :])
            order = corrected_order(grad, current, positions, config.topk_ratio)
        # The step's choices read on the host at once (one sync on a GPU, where each int() was one).
        top, ranked_rows = _on_host(best_tokens, order)

        if config.variant == "gcg-suffix":
            proposals = _gcg_proposals(ids, inserted, top, k * candidate_count, rng)
        else:
            if theirs:
                chosen = list(range(len(rows)))
            elif config.variant == "random-locs":
                chosen = [int(i) for i in rng.choice(len(inserted), size=min(k, len(inserted)), replace=False)]
            else:
                chosen = ranked_rows
            proposals = [(rows[i], token) for i in chosen for token in top[i] if token != ids[rows[i]]]
        if not proposals:
            result.steps.append(record)
            continue
        candidates = []
        for position, token in proposals:
            candidate = list(ids)
            candidate[position] = token
            candidates.append(candidate)
        losses = (yield Score(candidates)).total
        # Best true loss per position; gcg-suffix keeps only the single best swap (one per step, as GCG).
        best: dict[int, tuple[float, int]] = {}
        for (position, token), loss in zip(proposals, losses.tolist(), strict=True):
            if position not in best or loss > best[position][0]:
                best[position] = (loss, token)
        ranked = sorted(best.items(), key=lambda item: -item[1][0])
        if config.variant == "gcg-suffix":
            ranked = [r for r in ranked[:1] if r[1][0] > float(terms.total)]
        for position, (loss, token) in ranked:
            proposal = list(ids)
            proposal[position] = token
            accepted, verdict = yield _replacement_gate(proposal, before, config.replacement_gate)
            record["proposals"].append(
                {"position": position, "old": ids[position], "new": token, "old_text": decode([ids[position]]),
                 "new_text": decode([token]), "loss": loss, "accepted": accepted, "semantic": verdict}
            )
            if accepted:
                ids = proposal
                replaced.add(position)
        result.steps.append(record)
    result.question_ids = ids
    result.replaced_positions = sorted(replaced)
    result.steps.append({"step": config.steps, "loss": _loss_record((yield Score([ids])))})
    return result


def corrected_positions(grad: torch.Tensor, current_vectors: torch.Tensor, inserted: Sequence[int],
                        topk_ratio: float) -> list[int]:
    """Which of the ``inserted`` positions a step replaces (robusteval's, and --replacement-positions corrected):
    indices into ``inserted`` of the ceil(k x len) largest one-hot gradients of -L_opt at each position's current
    token (``grad`` [span, H] over the span; ``current_vectors`` [len(inserted), H]: the embedding of each inserted
    position's current token, scaled as the model reads it, :func:`.objective.token_vectors`)."""
    return [int(i) for i in corrected_order(grad, current_vectors, inserted, topk_ratio).tolist()]


def corrected_order(grad: torch.Tensor, current_vectors: torch.Tensor, inserted: Sequence[int] | torch.Tensor,
                    topk_ratio: float) -> torch.Tensor:
    """:func:`corrected_positions` as a tensor on ``grad``'s device, not yet read on the host (``inserted`` may be
    there already)."""
    rows = (inserted if isinstance(inserted, torch.Tensor)
            else torch.tensor(list(inserted), device=grad.device, dtype=torch.long))
    current = (grad[rows] * current_vectors.to(grad.device, grad.dtype)).sum(-1)
    k = max(1, math.ceil(topk_ratio * len(inserted)))
    return current.topk(min(k, len(inserted))).indices


def _on_host(best_tokens: torch.Tensor, order: torch.Tensor | None) -> tuple[list[list[int]], list[int]]:
    """(``best_tokens`` [rows, C] as lists, ``order`` as a list, [] for None) in one device-to-host copy."""
    if order is None:
        return best_tokens.tolist(), []
    flat = torch.cat([best_tokens.reshape(-1), order.to(best_tokens.device, best_tokens.dtype)]).tolist()
    width = best_tokens.shape[1]
    count = best_tokens.shape[0] * width
    return [flat[r : r + width] for r in range(0, count, width)], flat[count:]


def authors_positions(lead: torch.Tensor, embeddings: torch.Tensor, locations: Sequence[int],
                      topk_ratio: float, scale: float | torch.Tensor = 1.0) -> list[int]:
    """The positions the authors' code replaces (IRD 615-625), from ``locations`` (their inserted locations:
    absolute positions in the whole input, in their order) and ``lead``, the gradient of -L_opt at the first
    ``len(locations)`` input embeddings [>= L, H] (``embeddings`` [V, H] times ``scale``: the matrix as the model
    reads it).

    Their ``torch.gather(-grad, 1, locations)`` on the one-hot gradient [sequence, V] reads row i (the i-th token
    of the whole input, from the BOS) at column ``locations[i]`` (a position used as a vocabulary id), not the
    inserted positions' rows; their ``grad`` is of their cost, which plays our -L_opt, so ``-grad`` there is
    ``-lead`` here. Entry (i, locations[i]) of ``lead @ (scale x E)^T`` is ``lead[i] . scale x E[locations[i]]``:
    only those rows are indexed (then scaled, as :func:`~robusteval.attacks.matcha.objective.token_vectors`), so
    neither a scaled [V, H] copy nor an [L, V] product is made (2.1 GB and 0.5 MB per location for Llama-3-8B in
    float32). They replace ``int(len x k)`` (at least 1) locations, the largest first; ties go to the earlier
    location (torch's top-k leaves their order unspecified). A location past the vocabulary makes their gather
    fail: ValueError."""
    n = len(locations)
    if n == 0:
        return []
    if max(locations) >= embeddings.shape[0]:
        raise ValueError(f"location {max(locations)} is past the vocabulary ({embeddings.shape[0]} ids)")
    index = torch.tensor(list(locations), device=embeddings.device, dtype=torch.long)
    rows = (embeddings[index] * scale).to(device=lead.device, dtype=lead.dtype)  # [L, H]
    values = (-(lead[:n] * rows).sum(dim=-1)).tolist()
    count = max(1, int(n * topk_ratio))
    order = sorted(range(n), key=lambda i: -values[i])  # stable: ties keep the earlier location first
    return [int(locations[i]) for i in order[:count]]


def authors_locations(original: Sequence[int], perturbed: Sequence[int]) -> list[int]:
    """Their inserted locations (IRD 107-131): a greedy walk of the clean and the perturbed ids, where every
    perturbed token that differs from the clean token under the cursor counts as inserted (and every perturbed token
    left over at the end); so an inserted token equal to the next clean one shifts the location it reports."""
    out: list[int] = []
    if len(original) == len(perturbed):
        return out
    i = j = 0
    while i < len(original) and j < len(perturbed):
        if original[i] != perturbed[j]:
            out.append(j)
        else:
            i += 1
        j += 1
    return out + list(range(j, len(perturbed)))


def _replacement_gate(proposal: list[int], before: list[int], kind: str) -> Gate:
    """The gate of one replacement: against the original question (ours), or under the authors' insertions the
    span before the step against the span with the replacement ("corrected") or against itself ("authors": their
    gate never sees the replacement)."""
    if kind == "original":
        return Gate(proposal)
    if kind == "corrected":
        return Gate(proposal, against=before)
    if kind == "authors":
        return Gate(before, against=before)
    raise ValueError(f"unknown replacement gate {kind!r}")


def edit_spans(
    decode: Callable[[list[int]], str], ids: list[int], inserted: list[int], replaced: list[int]
) -> list[dict[str, Any]]:
    """Character spans of the inserted tokens in ``decode(ids).strip()`` (the stored perturbed question).

    ``kind`` is ``replaced`` for an inserted token that a gradient step later replaced, else ``inserted``.
    Offsets come from decoding growing prefixes, which is exact for every tokenizer family (a token's text
    depends on its neighbours in SentencePiece and byte-level BPE alike).
    """
    full = decode(ids)
    lead = len(full) - len(full.lstrip())
    ends = [len(decode(ids[: i + 1])) for i in range(len(ids))]
    starts = [0, *ends[:-1]]
    done = set(replaced)
    spans = []
    for position in inserted:
        start, end = starts[position], max(starts[position], ends[position])
        text = full[start:end]
        # Keep the visible word only: the leading space a token carries is not part of the edit.
        start += len(text) - len(text.lstrip())
        spans.append({"start": max(0, start - lead), "end": max(0, end - lead),
                      "kind": "replaced" if position in done else "inserted", "token_id": ids[position]})
    return spans


def _gcg_proposals(
    ids: list[int], positions: list[int], best_tokens: Sequence[Sequence[int]], count: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """``count`` random single swaps: a random suffix position, one of its top gradient tokens ([rows][C] ids)."""
    proposals = set()
    for _ in range(count):
        row = int(rng.integers(0, len(positions)))
        token = best_tokens[row][int(rng.integers(0, len(best_tokens[row])))]
        if token != ids[positions[row]]:
            proposals.add((positions[row], token))
    return sorted(proposals)


def _loss_record(terms: LossTerms) -> dict[str, float]:
    return {"total": float(terms.total[0]), "cot": float(terms.cot[0]), "answer": float(terms.answer[0])}
