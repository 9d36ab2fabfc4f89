"""The MATCHA embedding-level attack (L-inf PGD on the question's input embeddings) on a tiny trained Llama.

Checked: the epsilon-ball and epsilon's definition, that only the question's embeddings move (exemplars,
scaffold, model weights and the prefix cache untouched), the loss history, an independent PGD replay, and the
runner's per-example record.
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack, embedding_scale
from robusteval.attacks.matcha.objective import MatchaObjective, Reference
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore


@pytest.fixture(scope="module")
def runner(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> MatchaRunner:
    backend = load_backend(f"hf:{tiny_trained_dir}")
    store = RunStore.open(tmp_path_factory.mktemp("matcha_embedding") / "run")
    config = MatchaConfig(level="embedding", target_answer="clean", generation=GenerationOptions(max_new_tokens=32), steps=3, seed=0)
    return MatchaRunner(
        backend, store, AnswerFirstPrompt(default_exemplars("number")), config,
        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs],
    )  # fmt: skip


@pytest.fixture(scope="module")
def examples() -> list[Any]:
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    return load_dataset("jsonl", str(sample), limit=3, answer_type="number")


@pytest.fixture(scope="module")
def clean(runner: MatchaRunner, examples: list[Any]) -> list[dict[str, Any]]:
    records = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert records, "the trained tiny model should produce at least one answer + CoT to attack"
    return records


def _objective(runner: MatchaRunner, record: dict[str, Any]) -> MatchaObjective:
    reference = Reference(record["question_ids"], record["continuation_ids"], record["n_answer_tokens"])
    layout = runner.layout(record["question"])
    return MatchaObjective(runner.backend, layout.prefix, layout.head, layout.tail, reference)


@pytest.fixture(scope="module")
def objective(runner: MatchaRunner, clean: list[dict[str, Any]]) -> MatchaObjective:
    return _objective(runner, clean[0])


def _clean_embeds(objective: MatchaObjective) -> torch.Tensor:
    with torch.no_grad():
        return objective.embed_question([objective.reference.question_ids])[0].detach().clone()


def _loss(objective: MatchaObjective, embeds: torch.Tensor) -> dict[str, float]:
    with torch.no_grad():
        terms = objective.loss(embeds.unsqueeze(0))
    return {"total": float(terms.total[0]), "cot": float(terms.cot[0]), "answer": float(terms.answer[0])}


# --------------------------------------------------------------------------------------- epsilon ball


@pytest.mark.parametrize("eps_fraction", [0.005, 0.03])
def test_perturbation_stays_in_the_epsilon_ball(objective: MatchaObjective, eps_fraction: float) -> None:
    clean = _clean_embeds(objective)
    result = embedding_attack(objective, EmbeddingAttackConfig(eps_fraction=eps_fraction, steps=3))
    assert result.epsilon == pytest.approx(eps_fraction * embedding_scale(objective), rel=1e-9)
    delta = (result.question_embeds - clean).abs()
    assert float(delta.max()) <= result.epsilon + 1e-6
    assert result.max_abs_delta == pytest.approx(float(delta.max()), abs=1e-7)
    # From the clean point (no random start), 3 steps of eps/4 cannot leave the 3/4 eps ball either.
    zero_start = embedding_attack(
        objective, EmbeddingAttackConfig(eps_fraction=eps_fraction, steps=3, random_start=False)
    )
    assert float((zero_start.question_embeds - clean).abs().max()) <= 0.75 * zero_start.epsilon + 1e-6
    assert result.question_embeds.shape == clean.shape
    assert not torch.equal(result.question_embeds, clean)
    assert result.max_abs_delta > 0


def test_large_steps_are_clamped_to_the_ball(objective: MatchaObjective) -> None:
    clean = _clean_embeds(objective)
    result = embedding_attack(objective, EmbeddingAttackConfig(eps_fraction=0.01, step_fraction=3.0, steps=2))
    delta = (result.question_embeds - clean).abs()
    assert float(delta.max()) <= result.epsilon + 1e-6
    # A step of 3 eps lands every moved coordinate on the boundary.
    moved = delta[delta > 0]
    assert moved.numel() > 0
    assert torch.allclose(moved, torch.full_like(moved, result.epsilon), atol=1e-6)


def test_epsilon_scale_is_the_largest_prompt_embedding_coordinate(
    runner: MatchaRunner, objective: MatchaObjective
) -> None:
    """The reference scales eps by the largest |coordinate| of the prompt's embeddings (exemplars included)."""
    prompt_ids = objective.prefix_ids + objective.head_ids + list(objective.reference.question_ids) + objective.tail_ids
    with torch.no_grad():
        largest = float(runner.backend.embed(torch.tensor(prompt_ids)).abs().max())
    assert embedding_scale(objective) == pytest.approx(largest, rel=1e-6)


def test_zero_steps_is_the_clean_input(objective: MatchaObjective) -> None:
    clean = _clean_embeds(objective)
    result = embedding_attack(objective, EmbeddingAttackConfig(steps=0, random_start=False))
    assert torch.equal(result.question_embeds, clean)
    assert result.max_abs_delta == 0.0
    assert len(result.steps) == 1


def test_random_start_is_seeded_and_inside_the_ball(objective: MatchaObjective) -> None:
    """PGD starts from a uniform point in the eps-ball (the gradient at the clean input is exactly zero)."""
    clean = _clean_embeds(objective)
    config = EmbeddingAttackConfig(eps_fraction=0.02, steps=0)
    first, again, other = (embedding_attack(objective, config, seed=s) for s in (1, 1, 2))
    assert torch.equal(first.question_embeds, again.question_embeds)
    assert not torch.equal(first.question_embeds, other.question_embeds)
    assert 0 < first.max_abs_delta <= first.epsilon + 1e-6
    assert not torch.equal(first.question_embeds, clean)


# --------------------------------------------------------------------------------------- only the question


def test_only_question_embeddings_change(runner: MatchaRunner, objective: MatchaObjective) -> None:
    backend = runner.backend
    weights = {name: p.detach().clone() for name, p in backend.model.named_parameters()}
    head, tail = objective.head.detach().clone(), objective.tail.detach().clone()
    clean = _clean_embeds(objective)
    before = _loss(objective, clean)

    result = embedding_attack(objective, EmbeddingAttackConfig(eps_fraction=0.02, steps=3))

    # Model weights (hence exemplar embeddings) unchanged, no gradients accumulated on them.
    for name, p in backend.model.named_parameters():
        assert torch.equal(p.detach(), weights[name]), name
        assert p.grad is None, name
    # The scaffold ("Q:", "\nA:" + teacher-forced continuation) is untouched.
    assert torch.equal(objective.head, head) and torch.equal(objective.tail, tail)
    with torch.no_grad():
        assert torch.equal(objective.head, backend.embed(torch.tensor(objective.head_ids)))
    # The cached exemplar prefix still gives the same clean loss: it was not perturbed.
    assert _loss(objective, clean) == pytest.approx(before, rel=1e-6, abs=1e-7)
    # The result is the question only: one row per question token.
    assert result.question_embeds.shape == (len(objective.reference.question_ids), clean.shape[-1])
    assert not result.question_embeds.requires_grad


# --------------------------------------------------------------------------------------- loss history


def test_loss_recorded_per_step(objective: MatchaObjective) -> None:
    clean = _clean_embeds(objective)
    steps = 4
    result = embedding_attack(objective, EmbeddingAttackConfig(eps_fraction=0.02, steps=steps, random_start=False))
    assert [s["step"] for s in result.steps] == list(range(steps + 1))
    for step in result.steps:
        loss = step["loss"]
        assert set(loss) == {"total", "cot", "answer"}
        assert all(torch.isfinite(torch.tensor(v)) for v in loss.values())
        assert loss["total"] == pytest.approx(loss["cot"] - objective.lam * loss["answer"], rel=1e-5, abs=1e-6)
    # Step 0 is the clean input: L_opt = H_c - lambda * H_a; the last entry is the returned perturbation's loss.
    assert result.steps[0]["loss"] == pytest.approx(_loss(objective, clean), rel=1e-5, abs=1e-6)
    assert result.steps[-1]["loss"] == pytest.approx(_loss(objective, result.question_embeds), rel=1e-5, abs=1e-6)


def test_pgd_replay_ascends_l_opt(objective: MatchaObjective) -> None:
    """Replay E' <- clip(E' + alpha * eps * sign(grad L_opt), E - eps, E + eps) with a gradient taken here."""
    config = EmbeddingAttackConfig(eps_fraction=0.02, step_fraction=0.25, steps=3, random_start=False)
    result = embedding_attack(objective, config)
    clean = _clean_embeds(objective)
    eps = config.eps_fraction * embedding_scale(objective)
    current = clean.clone()
    for _ in range(config.steps):
        embeds = current.clone().unsqueeze(0).requires_grad_(True)
        (grad,) = torch.autograd.grad(objective.loss(embeds).total.sum(), embeds)
        current = current + config.step_fraction * eps * grad[0].sign()
        current = torch.clamp(current, clean - eps, clean + eps).detach()
    assert torch.allclose(result.question_embeds, current, atol=1e-7)


# --------------------------------------------------------------------------------------- runner record


def test_runner_embedding_record(runner: MatchaRunner, examples: list[Any], clean: list[dict[str, Any]]) -> None:
    record = clean[0]
    example = next(e for e in examples if e.id == record["id"])
    out = runner.attack_one(example, record)
    assert out["level"] == "embedding" and out["perturbed_question"] is None
    assert out["eps_fraction"] == runner.config.epsilon
    assert 0 < out["max_abs_delta"] <= out["epsilon"] + 1e-6
    assert len(out["steps"]) == runner.config.steps + 1
    assert out["lambda"] == pytest.approx((out["n4"] - out["n3"]) / out["n4"])
    assert set(out["seconds"]) >= {"optimise", "generate"}
    assert isinstance(out["perturbed_completion"], str)


def test_zero_step_generation_from_embeddings_reproduces_the_clean_completion(
    runner: MatchaRunner, examples: list[Any], clean: list[dict[str, Any]]
) -> None:
    """Generating from the (unperturbed) embeddings goes through the same prompt layout as the clean pass."""
    zero = MatchaRunner(runner.backend, runner.store, runner.prompt, replace(runner.config, steps=0, random_start=False),
                        reasoning_judge=runner.reasoning_judge, semantic_judge=runner.semantic_judge)
    for record in clean[:2]:
        example = next(e for e in examples if e.id == record["id"])
        out = zero.attack_one(example, record)
        assert out["max_abs_delta"] == 0.0
        assert out["perturbed_completion"] == record["completion"]
        assert out["answer_kept"] is True
