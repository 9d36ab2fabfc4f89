"""Examples attacked together in lock-step get exactly what each gets attacked alone (issue 19).

On CPU fp32 every decision is identical: inserted and replaced tokens, the proposals and their verdicts, the
perturbed question and completion, the kept answer. The logged loss values agree to float rounding (a padded
batched kernel sums in another order; ``helpers.runs.differences``). Each level and variant is checked, with a
semantic judge that rejects some edits (redraws put examples in different phases of their attack within one
round) and with ``--max-drift``; and the batch really is served together (fewer forwards than one by one).
"""

from __future__ import annotations

import zlib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import differences
from robusteval.attacks.matcha.config import VARIANTS
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.config import with_options
from robusteval.data.loaders import load_dataset
from robusteval.models import load_backend
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore


def picky_judge(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Rejects about half of the perturbed questions, by a hash of their text (deterministic, order-free)."""
    return [{"same_meaning": zlib.crc32(perturbed.encode()) % 2 != 0, "judge": "picky"} for _, perturbed in pairs]


@pytest.fixture(scope="module")
def backend(tiny_trained_dir: Path) -> Any:
    return load_backend(f"hf:{tiny_trained_dir}", device="cpu")


@pytest.fixture(scope="module")
def attackable(backend: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], list[dict[str, Any]]]:
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=8, answer_type="number")
    runner = runner_for(backend, tmp_path_factory.mktemp("clean") / "run", MatchaConfig(target_answer="clean"))
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]][:4]
    assert len(clean) >= 3, "the tiny trained model should give several answers + reasoning"
    assert len({len(r["question_ids"]) for r in clean}) > 1, "questions of different lengths: rows are padded"
    by_id = {ex.id: ex for ex in examples}
    return [by_id[r["id"]] for r in clean], clean


def runner_for(backend: Any, path: Path, config: MatchaConfig, semantic: Any = None) -> MatchaRunner:
    hyper = with_options(config, {"max_new_tokens": 24, "steps": 2, "seed": 7})
    return MatchaRunner(backend, RunStore.open(path), AnswerFirstPrompt(default_exemplars("number")), hyper,
                        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                        semantic_judge=semantic or (lambda pairs: [{"same_meaning": True} for _ in pairs]))


def alone_and_together(runner: MatchaRunner, examples: list[Any], clean: list[dict[str, Any]]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    alone = [runner.attack_one(example, record) for example, record in zip(examples, clean, strict=True)]
    return alone, runner.attack_many(examples, clean)


SETTINGS = [pytest.param({"level": "token", "variant": v}, id=f"token-{v}") for v in VARIANTS] + [
    pytest.param({"level": "token", "variant": "full", "n_candidates": 3}, id="token-full-3-candidates"),
    pytest.param({"level": "embedding"}, id="embedding"),
]


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_batch_decides_what_each_example_decides_alone(backend: Any, attackable: Any, tmp_path: Path,
                                                         setting: dict[str, Any]) -> None:
    examples, clean = attackable
    runner = runner_for(backend, tmp_path / "run", MatchaConfig(target_answer="clean", **setting), picky_judge)
    alone, together = alone_and_together(runner, examples, clean)
    assert differences(together, alone) == []
    # Not trivially equal: the attacks did something, and judged edits were refused along the way.
    if setting["level"] == "token":
        assert all(r.get("perturbed_question_ids") or r.get("skipped") for r in together)
        refused = [d for r in together for d in r["insertions"] if not d["accepted"]]
        refused += [p for r in together for s in r.get("steps", ()) for p in s.get("proposals", ())
                    if not p["accepted"]]
        assert refused, "the picky judge refused nothing: the gate's batching went untested"
        # Every edit names its text (the report has no tokenizer).
        proposals = [p for r in together for s in r.get("steps", ()) for p in s.get("proposals", ())]
        assert all((p["old_text"], p["new_text"]) == (backend.decode([p["old"]]), backend.decode([p["new"]]))
                   for p in proposals)
        assert all(d["token_texts"] == [backend.decode([t]) for t in d["tokens"]]
                   for r in together for d in r["insertions"])
    else:
        assert all(r["max_abs_delta"] > 0 for r in together)
    assert all(r["perturbed_completion"] for r in together if not r.get("skipped"))
    assert {r["seconds"]["batch"] for r in together} == {len(examples)}


def test_drift_gate_batched(backend: Any, attackable: Any, tmp_path: Path) -> None:
    """``--max-drift`` refuses some edits before the judge: the refusals and the judge's verdicts per example
    are the same in a batch."""
    examples, clean = attackable
    config = MatchaConfig(target_answer="clean", max_drift=0.35, drift_measure="char")
    runner = runner_for(backend, tmp_path / "run", config, picky_judge)
    alone, together = alone_and_together(runner, examples, clean)
    assert differences(together, alone) == []
    assert sum(r["drift_rejections"] for r in together) > 0
    assert [r["semantic_verdicts"] for r in together] == [r["semantic_verdicts"] for r in alone]


def test_the_batch_is_served_together(backend: Any, attackable: Any, tmp_path: Path) -> None:
    """One padded forward per round for all examples' gradients (or candidate losses), and one semantic-judge
    call per round: far fewer model calls and judge calls than attacking one example after another."""
    examples, clean = attackable
    judge_calls: list[int] = []

    def counting_judge(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        judge_calls.append(len(pairs))
        return picky_judge(pairs)

    runner = runner_for(backend, tmp_path / "run", MatchaConfig(target_answer="clean"), counting_judge)
    calls = [0]
    hook = backend.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        per_example = []
        for example, record in zip(examples, clean, strict=True):
            before = calls[0]
            runner.attack_one(example, record)
            per_example.append(calls[0] - before)
        alone_judged = len(judge_calls)
        judge_calls.clear()
        before = calls[0]
        runner.attack_many(examples, clean)
        together = calls[0] - before
    finally:
        hook.remove()
    # Lock-step: the batch takes about as many rounds as its longest example, not the sum of all of them; a
    # round where some examples want gradients and others candidate losses costs two forwards.
    assert together <= 2 * max(per_example) < sum(per_example)
    assert len(judge_calls) < alone_judged and max(judge_calls) > 1


def test_a_batched_run_stores_what_a_batch_one_run_stores(backend: Any, tmp_path: Path) -> None:
    """The pipeline at --batch-size 1 and 4: the same units (attack records, outcomes) and the same summary."""
    import robusteval as rv

    sample = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
    config = rv.MatchaRunConfig(data=rv.DataSpec("jsonl", sample, limit=6, answer_type="number"),
                                target_answer="clean", steps=2, generation=rv.GenerationOptions(max_new_tokens=24),
                                judging=rv.JudgeOptions(judge="arith", semantic_judge="none"))
    one = rv.attack_matcha(config, backend, tmp_path / "b1", batch_size=1)
    four = rv.attack_matcha(config, backend, tmp_path / "b4", batch_size=4)
    assert one["n_attacked"] >= 3
    assert differences(dict(four), dict(one)) == []
    stages = ("matcha_attack", "matcha_outcome")
    by_id = {stage: [sorted(rv.load_run(d).records(stage), key=lambda r: r["id"]) for d in (tmp_path / "b1",
                                                                                             tmp_path / "b4")]
             for stage in stages}
    for stage in stages:
        assert differences(by_id[stage][1], by_id[stage][0]) == [], stage


def test_a_batch_cut_by_the_logit_budget_decides_the_same(backend: Any, attackable: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With a logit budget of about two rows (a CPU with a large vocabulary), gradients, candidate losses and
    reference logits go in several padded forwards per round: still what each example decides alone."""
    import robusteval.models.hf_scoring as hf_scoring

    examples, clean = attackable
    runner = runner_for(backend, tmp_path / "run", MatchaConfig(target_answer="clean", n_candidates=3), picky_judge)
    alone = [runner.attack_one(example, record) for example, record in zip(examples, clean, strict=True)]
    widest = max(len(r["continuation_ids"]) for r in clean)
    budget = 2 * widest * backend.embedding_matrix.shape[0]
    calls = [0]
    hook = backend.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        whole = calls[0]
        runner.attack_many(examples, clean)
        whole = calls[0] - whole
        monkeypatch.setattr(hf_scoring, "logit_budget", lambda device: budget)
        cut = calls[0]
        together = runner.attack_many(examples, clean)
        cut = calls[0] - cut
    finally:
        hook.remove()
    assert differences(together, alone) == []
    assert cut > whole  # the budget did cut the rounds' forwards


def test_a_batch_in_flight_shows_its_round(backend: Any, attackable: Any, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A lock-step batch commits only when all its examples are done: meanwhile the progress lines say which
    round it is in and what it asks for, then that it is generating."""
    import logging

    from robusteval import progress

    examples, clean = attackable
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.01)
    caplog.set_level(logging.INFO, logger="robusteval")
    runner = runner_for(backend, tmp_path / "run", MatchaConfig(target_answer="clean"), picky_judge)
    runner.batch_size = len(examples)
    runner.attack_records(examples, clean)
    phases = [r.getMessage().split("; now: ", 1)[1] for r in caplog.records if "; now: " in r.getMessage()]
    assert any("example(s) in lock-step, round" in p and "gradient" in p for p in phases)
    assert any(p.startswith("generating") for p in phases)
