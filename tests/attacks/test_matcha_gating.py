"""Every perturbation MATCHA makes passes the semantic judge; pre-existing errors are not credited as
successes; the paper preset refuses settings the paper would not use."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack
from robusteval.cli.main import main
from robusteval.data.loaders import load_dataset
from robusteval.judges import REASONING, build_judge
from robusteval.judging import JudgeOptions
from robusteval.metrics.matcha import matcha_metrics
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.seeding import derive_rng
from robusteval.store import RunStore


@pytest.fixture(scope="module")
def runner(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> MatchaRunner:
    backend = load_backend(f"hf:{tiny_trained_dir}")
    store = RunStore.open(tmp_path_factory.mktemp("gating") / "run")
    config = MatchaConfig(target_answer="clean", generation=GenerationOptions(max_new_tokens=32), steps=2)
    return MatchaRunner(backend, store, AnswerFirstPrompt(default_exemplars("number")), config,
                        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])


@pytest.fixture(scope="module")
def clean(runner: MatchaRunner) -> dict[str, Any]:
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=4, answer_type="number")
    records = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert records, "the tiny trained model should give at least one answer + reasoning"
    return records[0]


def objective_of(runner: MatchaRunner, record: dict[str, Any]) -> MatchaObjective:
    layout = runner.layout(record["question"])
    reference = Reference(record["question_ids"], record["continuation_ids"], record["n_answer_tokens"])
    return MatchaObjective(runner.backend, layout.prefix, layout.head, layout.tail, reference)


@pytest.mark.parametrize("variant", ["full", "random-insert", "gcg-suffix"])
def test_insertions_are_judged_redrawn_and_finally_skipped(runner: MatchaRunner, clean: dict[str, Any],
                                                           variant: str) -> None:
    allowed = ordinary_token_ids(runner.backend.tokenizer)
    seen: list[list[int]] = []

    def reject_first_two(ids: list[int]) -> tuple[bool, dict[str, Any]]:
        seen.append(list(ids))
        ok = len(seen) > 2
        return ok, {"same_meaning": ok}

    config = TokenAttackConfig(variant, 0.3, 0.5, 1, 1, max_redraws=5)
    result = token_attack(objective_of(runner, clean), list(clean["question_ids"]), allowed, config,
                          derive_rng(0, "test", variant), reject_first_two)
    # The gate saw the question with its insertions first (before any gradient step), three draws in all.
    assert [d["accepted"] for d in result.insertions] == [False, False, True]
    # The attack starts from the accepted draw: only its inserted positions may change afterwards.
    start = seen[2]
    assert len(result.question_ids) == len(start) and result.inserted_positions
    assert all(a == b for i, (a, b) in enumerate(zip(result.question_ids, start, strict=True))
               if i not in result.inserted_positions)
    drawn = [[ids[p] for p in d["inserted_positions"]] for ids, d in zip(seen, result.insertions, strict=False)]
    assert drawn == [d["tokens"] for d in result.insertions]
    assert result.skipped is None and len(seen) >= 3

    def reject_all(ids: list[int]) -> tuple[bool, dict[str, Any]]:
        return False, {"same_meaning": False}

    skipped = token_attack(objective_of(runner, clean), list(clean["question_ids"]), allowed, config,
                           derive_rng(0, "test", variant), reject_all)
    assert skipped.skipped == "the semantic judge rejected all 6 random insertions"
    assert skipped.question_ids == list(clean["question_ids"]) and not skipped.steps


def test_a_rejecting_semantic_judge_skips_examples_with_the_reason(tiny_trained_dir: Path, tmp_path: Path) -> None:
    from robusteval.judges.base import JUDGES, Judge, Verdict, register_judge

    class RejectAll:
        name = "reject-all"
        task = "semantic"
        deterministic = True

        def judge(self, items: list[Any]) -> list[Verdict]:
            return [Verdict(False, self.name, "different meaning") for _ in items]

    data = tmp_path / "q.jsonl"
    rows = [{"question": f"Tom has {i} apples and buys {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with JUDGES.scoped():
        register_judge("reject-all")(lambda task, atom, load: RejectAll())
        assert isinstance(RejectAll(), Judge)
        from robusteval.attacks.matcha.pipeline import OUTCOME_STAGE, MatchaRunConfig, attack_matcha
        from robusteval.data.spec import DataSpec
        from robusteval.runs import load_run

        config = MatchaRunConfig(data=DataSpec("jsonl", str(data)), target_answer="clean", steps=1,
                                 generation=GenerationOptions(max_new_tokens=24),
                                 judging=JudgeOptions(semantic_judge="reject-all"), max_redraws=2)
        summary = attack_matcha(config, load_backend(f"hf:{tiny_trained_dir}"), tmp_path / "run")
    outcomes = load_run(tmp_path / "run").records(OUTCOME_STAGE)
    skipped = [r for r in outcomes if r.get("skipped")]
    assert skipped and summary["n_semantic_skipped"] == len(skipped)
    assert all(not r["attacked"] and r["skip_reason"] == "the semantic judge rejected all 3 random insertions"
               and len(r["insertions"]) == 3 for r in skipped)
    assert summary["n_attacked"] == sum(r["attacked"] for r in outcomes)


def test_clean_reasoning_already_wrong_is_not_a_success(runner: MatchaRunner) -> None:
    """With the arithmetic checker: a clean chain of thought holding a false equation is judged too."""
    arith = build_judge("arith", load_backend, task=REASONING)

    def judge(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        from robusteval.judges import ReasoningItem

        return [{"reasoning_correct": v.label, **v.to_record()} for v in arith.judge(
            [ReasoningItem(q, r, c) for q, r, c in items])]

    runner.reasoning_judge = judge
    base = {"clean_question": "Tom has 3 apples and buys 4 more. How many?", "answer_kept": True, "gold": "7"}
    records = [
        {**base, "id": "already-wrong", "clean_completion": "The answer is 7. 3 + 4 = 8, so 7.",
         "perturbed_completion": "The answer is 7. 3 + 4 = 9."},
        {**base, "id": "broken", "clean_completion": "The answer is 7. 3 + 4 = 7.",
         "perturbed_completion": "The answer is 7. 3 + 4 = 9."},
        {**base, "id": "kept", "clean_completion": "The answer is 7. 3 + 4 = 7.",
         "perturbed_completion": "The answer is 7. 4 + 3 = 7."},
    ]
    judged = {r["id"]: r for r in runner.judge(records)}
    assert judged["already-wrong"]["clean_cot_wrong"] is True
    assert judged["already-wrong"]["outcome"] == "clean_cot_wrong"
    assert judged["broken"]["outcome"] == "success" and judged["kept"]["outcome"] == "unsuccessful"
    metrics = matcha_metrics([{**r, "clean_correct": True} for r in judged.values()])
    # 3 attacked, 1 with a clean reasoning already wrong: a category of its own, still in the denominator.
    assert metrics["n_attacked"] == 3 and metrics["n_clean_cot_wrong"] == 1 and metrics["among_judged"]["n"] == 2
    assert metrics["sr"] == metrics["ur"] == metrics["clean_cot_wrong_rate"] == 1 / 3 and metrics["wr"] == 0.0


def test_arith_on_yes_no_and_an_incomplete_paper_preset_are_refused(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    yesno = tmp_path / "yn.jsonl"
    yesno.write_text(json.dumps({"question": "Is the sky blue?", "answer": "yes"}) + "\n", encoding="utf-8")
    args = ["attack", "matcha", "--model", "hf:/does/not/exist", "--dataset", "jsonl", "--data-file", str(yesno),
            "--answer-type", "yesno", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--judge: arith cannot judge yes/no reasoning" in err and not (tmp_path / "out").exists()
    math = tmp_path / "m.jsonl"
    math.write_text(json.dumps({"question": "What is 2 + 3?", "answer": "5"}) + "\n", encoding="utf-8")
    args = ["attack", "matcha", "--model", "hf:/does/not/exist", "--dataset", "jsonl", "--data-file", str(math),
            "--preset", "paper", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--preset: paper needs --exemplars FILE" in err and "--judge MODEL-SPEC" in err
    assert "--semantic-judge MODEL-SPEC" in err and "loading" not in err  # refused before any model loads


def test_pgd_state_is_fp32_in_a_bf16_model(tiny_trained_dir: Path, tmp_path: Path) -> None:
    """In bf16, a step of eps/4 rounds away next to larger coordinates; the fp32 PGD state keeps it."""
    from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack

    backend = load_backend(f"hf:{tiny_trained_dir}", dtype="bfloat16")
    store = RunStore.open(tmp_path / "run")
    run = MatchaRunner(backend, store, AnswerFirstPrompt(default_exemplars("number")),
                       MatchaConfig(target_answer="clean", generation=GenerationOptions(max_new_tokens=24)),
                       reasoning_judge=lambda items: [{} for _ in items],
                       semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=4, answer_type="number")
    record = next(r for r in run.clean_records(examples) if run.attackable(r)[0])
    objective = objective_of(run, record)
    config = EmbeddingAttackConfig(eps_fraction=0.005, step_fraction=0.25, steps=4)  # the paper's GSM8K eps
    start = embedding_attack(objective, EmbeddingAttackConfig(0.005, 0.25, steps=0), seed=3).question_embeds
    result = embedding_attack(objective, config, seed=3)
    clean = objective.embed_question([record["question_ids"]])[0].float()
    assert result.question_embeds.dtype == torch.bfloat16
    assert float((result.question_embeds.float() - clean).abs().max()) <= result.epsilon * 1.05  # in the ball
    # Coordinates whose bf16 spacing is more than twice a step: a bf16 PGD state rounds every step away there
    # (measured: 1 of 130 such coordinates moved), an fp32 state accumulates the steps (83 of 130).
    step = result.epsilon * config.step_fraction
    ulp = torch.pow(2.0, torch.floor(torch.log2(clean.abs().clamp_min(1e-30))) - 7)
    coarse = ulp / 2 > step
    moved = result.question_embeds.float() != start.float()
    assert int(coarse.sum()) >= 20 and float(moved[coarse].float().mean()) > 0.3
