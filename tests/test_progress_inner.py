"""Progress inside a batch: tokens generated and lock-step rounds move the line and its ETA (robusteval.progress)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from robusteval import progress
from robusteval.progress import _PlainProgress, inner_progress, progress_bar


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress.time, "monotonic", fake)
    return fake


def test_tokens_inside_the_one_batch_give_the_eta(clock: Clock) -> None:
    plain = _PlainProgress(30, "clean pass", 0, interval=30, echo=False)
    plain.in_flight = 30
    clock.now += 90
    assert plain.line().endswith("clean pass: 0/30 (0%), 1 min 30 s elapsed, eta unknown")
    progress._SHOWN.append(plain)
    try:
        with inner_progress() as report:
            report(800, 2400, "tokens")  # a third of 30 rows x 80 tokens: 10 units' worth in 90 s
            line = plain.line()
            assert "in the batch of 30: 800/2400 tokens, eta 3 min 00 s (9.0 s/unit)" in line
            with inner_progress() as inner:  # nested (a generation inside an attack's round): not counted
                inner(1, 2, "tokens")
            assert plain.inner == (800, 2400, "tokens")
        assert plain.inner is None
    finally:
        progress._SHOWN.remove(plain)


def test_inside_a_batch_counts_only_its_units_and_never_all_of_them(clock: Clock) -> None:
    plain = _PlainProgress(20, "attack", 0, interval=30, echo=False)
    plain.in_flight = 8
    plain.done = 16  # two batches done in 160 s, the last one (4 units) half way
    clock.now += 160
    plain.inner = (5, 10, "lock-step rounds")
    assert plain.in_flight_done() == 2.0
    assert "in the batch of 4: 5/10 lock-step rounds, eta 18 s (8.9 s/unit)" in plain.line()
    plain.inner = (12, 10, "lock-step rounds")  # past the estimate: short of the batch, never done by itself
    assert plain.in_flight_done() == pytest.approx(0.99 * 4)
    plain.advance(4)
    assert plain.inner is None


def test_a_decode_reports_every_token(tiny_backend: Any) -> None:
    steps: list[int] = []
    tiny_backend.decode_batch([], [tiny_backend.encode("Tom has 3 apples")] * 2, max_new_tokens=5,
                              on_step=steps.append)
    assert steps == list(range(1, len(steps) + 1)) and 1 <= len(steps) <= 5


def test_a_token_attack_counts_its_lock_step_rounds_within_the_estimate(tiny_backend: Any) -> None:
    from robusteval.attacks.matcha.lockstep import expected_rounds, run_lockstep
    from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids
    from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack_steps

    backend = tiny_backend
    question = backend.encode(" Tom has 3 apples and eats 1. How many are left?")
    reference = Reference(question, backend.encode(" The answer is 2. 3 - 1 = 2."), 5)
    objective = MatchaObjective(backend, backend.bos_ids, backend.encode("Q:"), backend.encode("\nA:"), reference)
    config = TokenAttackConfig(steps=2, topk_ratio=0.5)
    seen: list[Any] = []

    def gate(asked: list[Any]) -> list[tuple[bool, dict[str, Any]]]:
        seen.append(progress._SHOWN[-1].inner)
        return [(True, {}) for _ in asked]

    k = int(np.ceil(0.5 * max(1, round(0.2 * len(question)))))
    with progress_bar(1, "MATCHA token/full", in_flight=1):
        attack = token_attack_steps(objective, question, ordinary_token_ids(backend.tokenizer), config,
                                    np.random.default_rng(0))
        run_lockstep([objective], [attack], gate, expected_rounds=expected_rounds(2, k))
    assert seen[0] == (0, expected_rounds(2, k), "lock-step rounds")
    done = [s[0] for s in seen]
    assert done == sorted(done) and done[-1] > 0 and all(s[1] == expected_rounds(2, k) for s in seen)
