"""``--success-check insertion-and-final``: the reference implementation's extra checkpoint right after the random
insertions (issue 20). An example the insertions alone decide (answer changed: wrong; answer kept and reasoning
judged wrong: success) stops there, with no gradient step, and records the checkpoint; every other example is
attacked exactly as under ``final``."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.runs import differences
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.errors import UserError
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


JUDGES = {
    # Finds no reasoning wrong: only a changed answer decides at the insertion checkpoint.
    "never": lambda items: [{"reasoning_correct": True} for _ in items],
    # Finds every perturbed reasoning wrong (the clean ones right): every kept answer is a success there.
    "always": lambda items: [{"reasoning_correct": reference == candidate} for _, reference, candidate in items],
}


@pytest.fixture(scope="module")
def backend(tiny_trained_dir: Path) -> Any:
    return load_backend(f"hf:{tiny_trained_dir}", device="cpu")


@pytest.fixture(scope="module")
def attackable(backend: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], list[dict[str, Any]]]:
    examples = load_dataset("jsonl", SAMPLE, limit=8, answer_type="number")
    runner = runner_for(backend, tmp_path_factory.mktemp("clean") / "run", "final")
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    by_id = {ex.id: ex for ex in examples}
    return [by_id[r["id"]] for r in clean], clean


def runner_for(backend: Any, path: Path, success_check: str, judge: str = "never") -> MatchaRunner:
    config = MatchaConfig(target_answer="clean", generation=GenerationOptions(max_new_tokens=24), steps=2, seed=3, success_check=success_check)
    return MatchaRunner(backend, RunStore.open(path), AnswerFirstPrompt(default_exemplars("number")), config,
                        reasoning_judge=JUDGES[judge],
                        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])


@pytest.mark.parametrize("judge", ["never", "always"])
def test_insertion_checkpoint_decides_early_and_leaves_the_rest_as_final(backend: Any, attackable: Any,
                                                                         tmp_path: Path, judge: str) -> None:
    examples, clean = attackable
    final = runner_for(backend, tmp_path / "final", "final", judge).attack_many(examples, clean)
    early_runner = runner_for(backend, tmp_path / "early", "insertion-and-final", judge)
    early = early_runner.attack_many(examples, clean)
    assert {r["decided_at"] for r in final} == {"final"}
    checkpoints = [r["steps"][0].get("checkpoint") for r in early]
    if judge == "never":  # changed answers stop at insertion, the others go on: both kinds present
        assert set(checkpoints) == {"wrong", None}
    else:  # every example is decided by its insertions: a changed answer or a broken reasoning
        assert "success" in checkpoints and None not in checkpoints
    for record, reference in zip(early, final, strict=True):
        if record["decided_at"] == "final":
            # Not decided by the insertions: attacked exactly as under the final rule (same draws, same steps).
            assert differences({**record, "decided_at": None}, {**reference, "decided_at": None}) == []
            continue
        (step,) = record["steps"]  # no gradient step
        assert record["replaced_positions"] == [] and step["checkpoint"] in ("success", "wrong")
        # The same insertions as the final rule drew before its gradient steps.
        assert record["insertions"] == reference["insertions"]
        assert record["answer_kept"] is (step["checkpoint"] == "success")
    # The final judgement finds what the checkpoint found: the completion is the same one.
    for record, checkpoint in zip(early_runner.judge(early), checkpoints, strict=True):
        if checkpoint is not None:
            assert record["outcome"] in (checkpoint, "clean_cot_wrong")


def test_insertion_checkpoint_batched_equals_alone(backend: Any, attackable: Any, tmp_path: Path) -> None:
    examples, clean = attackable
    runner = runner_for(backend, tmp_path / "run", "insertion-and-final")
    alone = [runner.attack_one(example, record) for example, record in zip(examples, clean, strict=True)]
    assert differences(runner.attack_many(examples, clean), alone) == []


def test_the_rule_is_part_of_the_run_and_the_paper_preset_uses_the_reference_rule(backend: Any,
                                                                                  tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number")
    config = rv.MatchaRunConfig(data=data, target_answer="clean", steps=1,
                                generation=rv.GenerationOptions(max_new_tokens=16))
    assert config.hyperparameters().success_check == "final"
    assert any("after the last step" in d for d in config.deviations("number"))
    # Made before the option existed, or with it at final: the same identity (old runs resume).
    assert "success_check" not in config.hyperparameters().identity_record()
    early = dataclasses.replace(config, success_check="insertion-and-final")
    assert early.hyperparameters().identity_record()["success_check"] == "insertion-and-final"
    assert not any("after the last step" in d for d in early.deviations("number"))
    paper = dataclasses.replace(config, preset="paper")
    assert paper.hyperparameters().success_check == "insertion-and-final"
    assert dataclasses.replace(paper, success_check="final").hyperparameters().success_check == "final"
    with pytest.raises(UserError, match="token level"):
        dataclasses.replace(config, level="embedding", success_check="insertion-and-final").hyperparameters()

    summary = rv.attack_matcha(early, backend, tmp_path / "early", batch_size=4)
    assert summary["success_check"] == "insertion-and-final"
    assert sum(summary["decided_at"].values()) == summary["n_attacked"]
    outcomes = rv.load_run(tmp_path / "early").records("matcha_outcome")
    assert {r["decided_at"] for r in outcomes if r["attacked"]} <= {"insertion", "final"}
    # Another rule is another run: refused in the same directory.
    with pytest.raises(UserError, match="success_check"):
        rv.attack_matcha(config, backend, tmp_path / "early", batch_size=4)
