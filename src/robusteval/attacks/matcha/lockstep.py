"""Many examples attacked together, in lock-step.

Each example's attack is written as a plain sequential algorithm, a generator that *yields* what it needs from
the model or the judge and receives the answer (``grad, terms = yield Gradient(ids)``). :func:`run_lockstep`
advances all examples of a batch at once: every round it collects the requests of every example still running,
serves each kind in one batched call (one padded forward/backward for all gradients, one for all candidate
losses, one semantic-judge call for all gates), and sends each example its own answer.

An example's own decisions depend only on its own answers and its own seeded generator, so a batch decides
exactly what each example would decide alone (up to the float rounding of padded batched kernels); with one
example the driver is simply the sequential algorithm.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from robusteval.attacks.matcha.loss import LossTerms
from robusteval.attacks.matcha.objective import MatchaObjective, gradients, scores
from robusteval.progress import inner_progress, set_phase


@dataclass(frozen=True)
class Gate:
    """Ask the semantic gate whether the question with these ids keeps its meaning -> (accepted, verdict); compared
    with the original question, or with ``against`` (the authors' insertions gate each token against the question
    as it was before it)."""

    ids: list[int]
    against: list[int] | None = None


@dataclass(frozen=True)
class Gradient:
    """d(-L_opt)/d(question embeddings) at a question (ids, or embeddings [Lq, H]) -> (grad [Lq, H], terms)."""

    question: list[int] | torch.Tensor


@dataclass(frozen=True)
class LeadingGradient:
    """d(-L_opt)/d(input embeddings) of the first ``rows`` positions of the whole input (prefix included) at a
    question's ids -> grad [rows, H] (the authors' replacement positions read these rows: see
    :func:`robusteval.attacks.matcha.token.authors_positions`). Served one example at a time."""

    question: list[int]
    rows: int


@dataclass(frozen=True)
class Score:
    """L_opt terms (no gradient) of equal-length questions (id lists, or embeddings [C, Lq, H]) -> LossTerms [C]."""

    questions: list[list[int]] | torch.Tensor


@dataclass(frozen=True)
class Checkpoint:
    """Generate from the question with these ids and judge the completion -> "success" (answer kept, reasoning
    judged wrong), "wrong" (answer changed) or None (neither: the attack goes on)."""

    ids: list[int]


Request = Gate | Gradient | LeadingGradient | Score | Checkpoint
R = TypeVar("R")
#: An example's attack: yields requests, receives their answers, returns its result.
AttackSteps = Generator[Request, Any, R]
#: Many gate requests at once, as (example index, its Gate) -> (accepted, verdict) each, in order.
GateMany = Callable[[list[tuple[int, Gate]]], list[tuple[bool, dict[str, Any]]]]
#: Many checkpoints at once, as (example index, question ids) -> "success", "wrong" or None each, in order.
CheckMany = Callable[[list[tuple[int, list[int]]]], list[str | None]]


def run_lockstep(objectives: Sequence[MatchaObjective], attacks: Sequence[AttackSteps[R]],
                 gate: GateMany | None = None, check: CheckMany | None = None, *,
                 expected_rounds: int | None = None) -> list[R]:
    """Run ``attacks[i]`` (against ``objectives[i]``) together; their results in order. ``gate`` answers the
    semantic gates, ``check`` the checkpoints (both batched over the examples asking in a round).
    ``expected_rounds`` (:func:`expected_rounds`): what the progress shown counts the rounds against."""
    if len(objectives) != len(attacks):
        raise ValueError(f"{len(objectives)} objectives for {len(attacks)} attacks")
    with inner_progress() as report:
        return _run(objectives, attacks, gate, check, expected_rounds,
                    lambda rounds, total: report(rounds, total, "lock-step rounds"))


def expected_rounds(steps: int, proposals: int, *, checkpoint: bool = False, redraws: int = 0) -> int:
    """Rounds an attack of ``steps`` gradient steps takes at most when each step gates ``proposals`` replacements
    (one at a time): the insertion's gate (and ``redraws``), the ``checkpoint``, then per step a gradient, a
    candidate score and the gates, and a last score."""
    return 1 + redraws + int(checkpoint) + steps * (2 + proposals) + 1


def _run(objectives: Sequence[MatchaObjective], attacks: Sequence[AttackSteps[R]], gate: GateMany | None,
         check: CheckMany | None, expected: int | None, report: Callable[[int, int], None]) -> list[R]:
    results: list[Any] = [None] * len(attacks)
    pending: dict[int, Request] = {}

    def advance(index: int, reply: Any) -> None:
        try:
            pending[index] = attacks[index].send(reply)
        except StopIteration as done:
            results[index] = done.value

    for index in range(len(attacks)):
        advance(index, None)
    rounds = 0
    while pending:
        asked = dict(pending)
        replies: dict[int, Any] = {}
        pending.clear()
        rounds += 1
        # The estimate may fall short (redraws): the count goes on, its share stays below the whole batch.
        if expected:
            report(rounds - 1, max(expected, rounds))
        kinds = Counter(type(r).__name__.lower() for r in asked.values())
        set_phase(f"{len(attacks)} example(s) in lock-step, round {rounds}: "
                  + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
        gates = [(i, r) for i, r in asked.items() if isinstance(r, Gate)]
        if gates:
            if gate is None:
                raise ValueError("an attack asked the semantic gate, but none was given")
            replies.update(zip((i for i, _ in gates), gate(gates), strict=True))
        checks = [(i, r.ids) for i, r in asked.items() if isinstance(r, Checkpoint)]
        if checks:
            if check is None:
                raise ValueError("an attack asked for a checkpoint, but no checker was given")
            replies.update(zip((i for i, _ in checks), check(checks), strict=True))
        wanted = [(i, r.question) for i, r in asked.items() if isinstance(r, Gradient)]
        if wanted:
            embeds = [_embeds(objectives[i], [q])[0] if not isinstance(q, torch.Tensor) else q for i, q in wanted]
            replies.update(zip((i for i, _ in wanted), gradients([objectives[i] for i, _ in wanted], embeds),
                               strict=True))
        for i, r in asked.items():
            if isinstance(r, LeadingGradient):
                replies[i] = objectives[i].leading_gradient(r.question, r.rows)
        scored = [(i, r.questions) for i, r in asked.items() if isinstance(r, Score)]
        if scored:
            # Candidate ids are embedded a chunk at a time inside scores (all at once is quadratic in the question).
            terms: list[LossTerms] = scores([objectives[i] for i, _ in scored], [q for _, q in scored])
            replies.update(zip((i for i, _ in scored), terms, strict=True))
        for index in asked:
            advance(index, replies[index])
    return results


def _embeds(objective: MatchaObjective, questions: Sequence[Sequence[int]]) -> torch.Tensor:
    with torch.no_grad():
        return objective.embed_question(questions)
