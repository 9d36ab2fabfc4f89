"""Lock-step gathering (issue 40): an example's costly request waits a few rounds for the others on their way to it,
so they are served in one batched call, and nothing any example decides changes.

Under ``--count authors`` each token is inserted and gated one at a time, so the examples of a batch need different
numbers of gate rounds and reached the insertion checkpoint (a whole generation) in different rounds: one
single-example generation each. Gathered, the batch's checkpoints are one batched generation."""

from __future__ import annotations

from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import differences
from robusteval.attacks.matcha import lockstep
from robusteval.attacks.matcha.lockstep import Checkpoint, Gate, Gradient, Score, held_back
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.judges import ArithmeticJudge, ReasoningItem
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
PATIENCE = lockstep.GATHER_ROUNDS  # the default, read before a test sets it


def judge_reasoning(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    verdicts = ArithmeticJudge().judge([ReasoningItem(*item) for item in items])
    return [{"reasoning_correct": v.label, **v.to_record()} for v in verdicts]


def attack(backend: Any, path: Path, gather_rounds: int, monkeypatch: pytest.MonkeyPatch
           ) -> tuple[list[dict[str, Any]], list[int]]:
    """The authors' token attack (``insertion-and-final``) of four examples in one batch; its records and the rows
    of each generation the runner asked for (the insertion checkpoints', then the final one)."""
    monkeypatch.setattr(lockstep, "GATHER_ROUNDS", gather_rounds)
    examples = load_dataset("jsonl", SAMPLE, limit=4, answer_type="number")
    config = MatchaConfig(level="token", target_answer="clean", generation=GenerationOptions(max_new_tokens=24), steps=2, seed=5,
                          counting="authors", success_check="insertion-and-final",
                          replacement_positions="corrected")
    runner = MatchaRunner(backend, RunStore.open(path), AnswerFirstPrompt(default_exemplars("number")), config,
                          reasoning_judge=judge_reasoning,
                          semantic_judge=lambda pairs: [{"same_meaning": len(b) % 3 != 0} for _, b in pairs])
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert len(clean) == 4
    by_id = {ex.id: ex for ex in examples}
    generations: list[int] = []
    decode = runner._decode

    def counted(rows: Any) -> Any:
        generations.append(len(rows))
        return decode(rows)

    monkeypatch.setattr(runner, "_decode", counted)
    return runner.attack_many([by_id[r["id"]] for r in clean], clean), generations


def test_the_insertion_checkpoints_are_one_batched_generation_and_decide_the_same(
        tiny_trained_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    apart, apart_generations = attack(backend, tmp_path / "apart", 0, monkeypatch)
    gathered, gathered_generations = attack(backend, tmp_path / "gathered", PATIENCE, monkeypatch)
    # Every record the same: insertions and their verdicts, steps, perturbed ids, completion, where it was decided.
    assert differences(gathered, apart) == []
    assert all(r.get("perturbed_completion") for r in gathered)
    # The examples really were apart: their insertions took different numbers of gates.
    assert len({len(r["insertions"]) for r in gathered}) > 1
    # Served apart, the four checkpoints were generations of one or two rows, as the examples got there (the last
    # call is the final generation, of the examples the checkpoint left undecided); gathered, one of the four.
    assert sum(apart_generations[:-1]) == 4 and len(apart_generations[:-1]) > 1
    assert gathered_generations[:-1] == [4]
    assert any(r["decided_at"] == "final" and r["steps"] for r in gathered), "no gradient step was taken"
    assert gathered_generations[-1] == apart_generations[-1]


def request(kind: type, ids: list[int] | None = None) -> Any:
    ids = ids or [1, 2]
    return {Gate: Gate(ids), Checkpoint: Checkpoint(ids), Gradient: Gradient(ids), Score: Score([ids])}[kind]


def test_a_request_waits_only_for_an_example_on_its_way_to_it() -> None:
    """The scheduling rule on hand-made states: who waits, for whom, and for how long."""
    fresh: list[Counter[type]] = [Counter({Gate: 3}), Counter({Gate: 1}), Counter({Gate: 5})]
    # 0 asks its checkpoint while 1 still gates: 0 waits; 2's checkpoint waits too (both are served together later).
    assert held_back({0: request(Checkpoint), 1: request(Gate), 2: request(Checkpoint)}, fresh, {}, 8) == {0, 2}
    # Nobody else on the way: served at once.
    assert held_back({0: request(Checkpoint), 2: request(Checkpoint)}, fresh, {}, 8) == set()
    # Gates are never held (they are the cheap way there): 0 gates on, 1's checkpoint waits for it.
    assert held_back({0: request(Gate), 1: request(Checkpoint)}, fresh, {}, 8) == {1}
    # Patience: after 8 rounds in a row the checkpoint is served whatever the others do; 0 turns it off.
    assert held_back({0: request(Checkpoint), 1: request(Gate)}, fresh, {0: 8}, 8) == set()
    assert held_back({0: request(Checkpoint), 1: request(Gate)}, fresh, {}, 0) == set()
    # An example already past that request (answered as many of that kind) is not waited for. 0 and 1 have had one
    # gradient and one score, 2 two gradients and one score: 0's second gradient waits for 1 (gating) but not for
    # 2; 2's second score waits for both.
    later: list[Counter[type]] = [Counter({Gradient: 1, Score: 1}), Counter({Gradient: 1, Score: 1}), Counter({Gradient: 2, Score: 1})]
    assert held_back({0: request(Gradient), 1: request(Gate), 2: request(Score)}, later, {}, 8) == {0, 2}
    assert held_back({0: request(Gradient), 2: request(Score)}, later, {}, 8) == {2}
    # Two examples each waiting for the other (neither has had a gradient or a score): one of them is served, so
    # the batch always moves on.
    crossed: list[Counter[type]] = [Counter(), Counter()]
    held = held_back({0: request(Gradient), 1: request(Score)}, crossed, {}, 8)
    assert len(held) == 1
