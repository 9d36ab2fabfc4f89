"""MATCHA embedding-level attack: L-inf PGD on the question's input embeddings only.

``E' <- clip_{[E - eps, E + eps]}(E' + step * eps * sign(d L_opt / d E'))`` for ``steps`` iterations, where
eps = ``eps_fraction`` x the largest absolute embedding coordinate of the clean prompt (exemplars, head,
question, tail), as the reference implementation scales it. Exemplar and scaffold embeddings are untouched.

PGD starts from a seeded uniform random point in the eps-ball (as Madry et al.): at the clean input both
cross-entropies sit at their minimum, so the gradient of L_opt is exactly zero there and a first step from
the clean point would follow floating-point noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from robusteval.attacks.matcha.lockstep import AttackSteps, Gradient, Score, run_lockstep
from robusteval.attacks.matcha.objective import MatchaObjective


@dataclass(frozen=True)
class EmbeddingAttackConfig:
    eps_fraction: float = 0.005
    step_fraction: float = 0.25  # step = step_fraction * eps
    steps: int = 5
    random_start: bool = True


@dataclass
class EmbeddingAttackResult:
    question_embeds: torch.Tensor  # [Lq, H], perturbed
    epsilon: float
    max_abs_delta: float
    steps: list[dict[str, Any]] = field(default_factory=list)


def embedding_scale(objective: MatchaObjective) -> float:
    """Largest absolute coordinate among the clean prompt's input embeddings."""
    with torch.no_grad():
        prefix = objective.backend.embed(torch.tensor(objective.prefix_ids)) if objective.prefix_ids else None
        question = objective.embed_question([objective.reference.question_ids])[0]
        tail = objective.backend.embed(torch.tensor(objective.tail_ids))
        parts = [question.abs().max(), objective.head.abs().max(), tail.abs().max()]
        if prefix is not None:
            parts.append(prefix.abs().max())
        return float(torch.stack(parts).max())


def embedding_attack(
    objective: MatchaObjective, config: EmbeddingAttackConfig, seed: int = 0
) -> EmbeddingAttackResult:
    """The embedding attack on one example (:func:`embedding_attack_steps` driven alone)."""
    return run_lockstep([objective], [embedding_attack_steps(objective, config, seed)])[0]


def embedding_attack_steps(
    objective: MatchaObjective, config: EmbeddingAttackConfig, seed: int = 0
) -> AttackSteps[EmbeddingAttackResult]:
    """PGD on one example as lock-step steps (:mod:`.lockstep`): yields its gradients and final score."""
    with torch.no_grad():
        clean = objective.embed_question([objective.reference.question_ids])[0].detach()
    epsilon = config.eps_fraction * embedding_scale(objective)
    step = config.step_fraction * epsilon
    # The PGD state lives in fp32 whatever the model dtype: in bf16 an eps/4 step next to a coordinate of a
    # much larger magnitude rounds away, and the attack would silently not move.
    clean32 = clean.float()
    perturbed = clean32.clone()
    if config.random_start:
        generator = torch.Generator().manual_seed(seed)
        noise = torch.rand(clean.shape, generator=generator, dtype=torch.float32) * 2 - 1
        perturbed = clean32 + (noise * epsilon).to(clean.device)
    history: list[dict[str, Any]] = []
    for index in range(config.steps):
        grad, terms = yield Gradient(perturbed.to(clean.dtype))
        history.append({"step": index, "loss": {"total": float(terms.total), "cot": float(terms.cot),
                                                "answer": float(terms.answer)}})
        # grad is d(-L_opt); ascend L_opt.
        perturbed = perturbed - step * grad.float().sign()
        perturbed = torch.max(torch.min(perturbed, clean32 + epsilon), clean32 - epsilon).detach()
    final = perturbed.to(clean.dtype)  # what the model sees
    terms = yield Score(final.unsqueeze(0))
    history.append({"step": config.steps, "loss": {"total": float(terms.total[0]), "cot": float(terms.cot[0]),
                                                   "answer": float(terms.answer[0])}})
    return EmbeddingAttackResult(final, epsilon, float((final.float() - clean32).abs().max()), history)
