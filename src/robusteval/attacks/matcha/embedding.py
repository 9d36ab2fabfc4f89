"""MATCHA embedding-level attack: L-inf PGD on the input embeddings of the objective's editable span.

``E' <- clip_{[E - eps, E + eps]}(E' + step * eps * sign(d L_opt / d E'))`` for ``steps`` iterations, where
eps = ``eps_fraction`` x the largest absolute embedding coordinate of the clean prompt (exemplars, head,
question, tail; ``eps_base="prompt"``, ours) or of the prompt and the clean response (``"prompt+response"``: the
authors' code, ``inference_emb_attack.py`` L263-272, which embeds ``" " + response`` re-tokenised). Only the
editable span moves: the question (ours) or, under ``--count authors``, question + answer trigger
(:func:`.layout.authors_pgd_layout`); exemplar and scaffold embeddings are untouched.

Ours starts PGD from a seeded uniform random point in the eps-ball (as Madry et al.): at the clean input both
cross-entropies sit at their minimum, so the gradient of L_opt is zero there up to rounding and a first step from
the clean point follows floating-point noise. The authors' code starts at the clean input (L276: noise of radius
0); their loss (docs/matcha.md, row 14) is not at a minimum there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from robusteval.attacks.matcha.lockstep import AttackSteps, Gradient, Score, run_lockstep
from robusteval.attacks.matcha.objective import MatchaObjective
from robusteval.attacks.matcha.settings import EPSILON, STEP_FRACTION, STEPS
from robusteval.models.tokenization import tokenize_with_offsets


@dataclass(frozen=True)
class EmbeddingAttackConfig:
    # The values MatchaConfig resolves to (one table of defaults, attacks/matcha/settings.py).
    eps_fraction: float = EPSILON
    step_fraction: float = STEP_FRACTION  # step = step_fraction * eps
    steps: int = STEPS
    random_start: bool = True
    eps_base: str = "prompt"  # config.EPS_BASES


@dataclass
class EmbeddingAttackResult:
    question_embeds: torch.Tensor  # [Lq, H], perturbed
    epsilon: float
    max_abs_delta: float
    steps: list[dict[str, Any]] = field(default_factory=list)


def embedding_scale(objective: MatchaObjective, base: str = "prompt") -> float:
    """Largest absolute coordinate among the clean prompt's input embeddings, and with ``base="prompt+response"``
    the clean response's too: its text (the continuation decoded) re-tokenised after a space, as the authors embed
    it (``tokenizer(' ' + responses)``; their BOS there is the prompt's, already counted)."""
    backend = objective.backend
    ids = [*objective.prefix_ids, *objective.head_ids, *objective.reference.question_ids, *objective.tail_ids]
    if base == "prompt+response":
        ids += tokenize_with_offsets(backend.tokenizer, " " + backend.decode(objective.reference.continuation_ids))[0]
    with torch.no_grad():
        return float(backend.embed(torch.tensor(ids, dtype=torch.long)).abs().max())


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
    epsilon = config.eps_fraction * embedding_scale(objective, config.eps_base)
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
