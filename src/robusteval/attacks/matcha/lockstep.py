"""Many examples attacked together, in lock-step.

Each example's attack is written as a plain sequential algorithm, a generator that *yields* what it needs from
the model or the judge and receives the answer (``grad, terms = yield Gradient(ids)``). :func:`run_lockstep`
advances all examples of a batch at once: every round it collects the requests of every example still running,
serves each kind in one batched call (one padded forward/backward for all gradients, one for all candidate
losses, one semantic-judge call for all gates), and sends each example its own answer.

An example's own decisions depend only on its own answers and its own seeded generator, so a batch decides
exactly what each example would decide alone (up to the float rounding of padded batched kernels); with one
example the driver is simply the sequential algorithm.

Examples drift apart: one needs more gates than another (redraws, or more tokens inserted one at a time), so they
reach their next costly request in different rounds, and a round would serve it for a few of them only. The
driver therefore *gathers* the kinds whose batched call costs about as much for many examples as for one
(``gathered`` below: checkpoints, gradients, candidate scores): an example's n-th request of such a kind waits
while another example that has asked it fewer than n times is still doing other work this round (so is on its
way to it), at most ``GATHER_ROUNDS`` rounds in a row; then they are served together. Only the order of calls
changes, never an example's answers, so the results are those of serving every request at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

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

    gathered: ClassVar[bool] = False  # each example's gates are its cheap way to its next gathered request


@dataclass(frozen=True)
class Gradient:
    """d(-L_opt)/d(question embeddings) at a question (ids, or embeddings [Lq, H]) -> (grad [Lq, H], terms)."""

    question: list[int] | torch.Tensor

    gathered: ClassVar[bool] = True


@dataclass(frozen=True)
class LeadingGradient:
    """d(-L_opt)/d(input embeddings) of the first ``rows`` positions of the whole input (prefix included) at a
    question's ids -> grad [rows, H] (the authors' replacement positions read these rows: see
    :func:`robusteval.attacks.matcha.token.authors_positions`). Served one example at a time."""

    question: list[int]
    rows: int

    gathered: ClassVar[bool] = False


@dataclass(frozen=True)
class Score:
    """L_opt terms (no gradient) of equal-length questions (id lists, or embeddings [C, Lq, H]) -> LossTerms [C]."""

    questions: list[list[int]] | torch.Tensor

    gathered: ClassVar[bool] = True


@dataclass(frozen=True)
class Checkpoint:
    """Generate from the question with these ids and judge the completion -> "success" (answer kept, reasoning
    judged wrong), "wrong" (answer changed) or None (neither: the attack goes on)."""

    ids: list[int]

    gathered: ClassVar[bool] = True


Request = Gate | Gradient | LeadingGradient | Score | Checkpoint
R = TypeVar("R")
#: How many rounds in a row a gathered request may wait for other examples to reach it (:func:`held_back`):
#: insertions gated one token at a time put examples tens of gate rounds apart before their checkpoint.
GATHER_ROUNDS = 64
#: An example's attack: yields requests, receives their answers, returns its result.
AttackSteps = Generator[Request, Any, R]
#: Many gate requests at once, as (example index, its Gate) -> (accepted, verdict) each, in order.
GateMany = Callable[[list[tuple[int, Gate]]], list[tuple[bool, dict[str, Any]]]]
#: Many checkpoints at once, as (example index, question ids) -> "success", "wrong" or None each, in order.
CheckMany = Callable[[list[tuple[int, list[int]]]], list[str | None]]


def run_lockstep(objectives: Sequence[MatchaObjective], attacks: Sequence[AttackSteps[R]],
                 gate: GateMany | None = None, check: CheckMany | None = None, *,
                 expected_rounds: int | None = None, gather_rounds: int | None = None) -> list[R]:
    """Run ``attacks[i]`` (against ``objectives[i]``) together; their results in order. ``gate`` answers the
    semantic gates, ``check`` the checkpoints (both batched over the examples asking in a round).
    ``expected_rounds`` (:func:`expected_rounds`): what the progress shown counts the rounds against.
    ``gather_rounds``: how long a gathered request may wait for the others (:func:`held_back`; None:
    ``GATHER_ROUNDS``, 0: every request is served in the round it is asked)."""
    if len(objectives) != len(attacks):
        raise ValueError(f"{len(objectives)} objectives for {len(attacks)} attacks")
    patience = GATHER_ROUNDS if gather_rounds is None else gather_rounds
    with inner_progress() as report:
        return _run(objectives, attacks, gate, check, expected_rounds, patience,
                    lambda rounds, total: report(rounds, total, "lock-step rounds"))


def expected_rounds(steps: int, proposals: int, *, checkpoint: bool = False, redraws: int = 0) -> int:
    """Rounds an attack of ``steps`` gradient steps takes at most when each step gates ``proposals`` replacements
    (one at a time): the insertion's gate (and ``redraws``), the ``checkpoint``, then per step a gradient, a
    candidate score and the gates, and a last score."""
    return 1 + redraws + int(checkpoint) + steps * (2 + proposals) + 1


def held_back(asked: Mapping[int, Request], served: Sequence[Counter[type]], waited: Mapping[int, int],
              patience: int) -> set[int]:
    """The examples whose request waits this round. ``asked``: each running example's request; ``served[i]``: how
    many requests of each kind example i has had answered; ``waited``: the rounds each has waited in a row.

    A request of a ``gathered`` kind, example i's n-th of that kind, waits while some other example j is on its way
    to the same request: j has been answered fewer than n of that kind and asks another kind this round, which is
    served (a j that waits itself brings nothing nearer). At most ``patience`` rounds in a row; an example that
    never asks that kind again stops blocking when it finishes. At least one request is always served."""
    blockers: dict[int, set[int]] = {}
    for i, request in asked.items():
        kind = type(request)
        if not getattr(kind, "gathered", False) or waited.get(i, 0) >= patience:
            continue
        behind = {j for j, other in asked.items()
                  if j != i and type(other) is not kind and served[j][kind] <= served[i][kind]}
        if behind:
            blockers[i] = behind
    # Release every request whose blockers all wait too, until none is left to release: a cycle of waits is
    # broken, and when every request would wait the first is served.
    released = True
    while released:
        released = False
        for i in list(blockers):
            if blockers[i].issubset(blockers):
                del blockers[i]
                released = True
    return set(blockers)


def _run(objectives: Sequence[MatchaObjective], attacks: Sequence[AttackSteps[R]], gate: GateMany | None,
         check: CheckMany | None, expected: int | None, patience: int,
         report: Callable[[int, int], None]) -> list[R]:
    results: list[Any] = [None] * len(attacks)
    pending: dict[int, Request] = {}
    served: list[Counter[type]] = [Counter() for _ in attacks]
    waited: dict[int, int] = {}

    def advance(index: int, reply: Any) -> None:
        try:
            pending[index] = attacks[index].send(reply)
        except StopIteration as done:
            results[index] = done.value

    for index in range(len(attacks)):
        advance(index, None)
    rounds = 0
    while pending:
        held = held_back(pending, served, waited, patience)
        asked = {i: pending[i] for i in sorted(pending) if i not in held}  # in example order, as always
        replies: dict[int, Any] = {}
        for i in asked:
            del pending[i]
            waited.pop(i, None)
            served[i][type(asked[i])] += 1
        for i in held:
            waited[i] = waited.get(i, 0) + 1
        rounds += 1
        # The estimate may fall short (redraws): the count goes on, its share stays below the whole batch.
        if expected:
            report(rounds - 1, max(expected, rounds))
        kinds = Counter(type(r).__name__.lower() for r in asked.values())
        set_phase(f"{len(attacks)} example(s) in lock-step, round {rounds}: "
                  + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
                  + (f" ({len(held)} waiting to be served with the others)" if held else ""))
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
