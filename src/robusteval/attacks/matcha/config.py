"""MATCHA's configuration, light to import (no torch): the attack's hyper-parameters with the paper's
defaults per dataset, and the run config behind ``robusteval attack matcha`` and ``robusteval.attack_matcha``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.config import nested, option
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.seeding import DEFAULT_SEED

VARIANTS = ("full", "random-insert", "random-locs", "cot-loss-only", "gcg-suffix")

#: Paper defaults per dataset: (top-k ratio, epsilon fraction).
DATASET_DEFAULTS = {"singleeq": (0.5, 0.02), "gsm8k": (0.25, 0.005), "strategyqa": (0.5, 0.03)}
FALLBACK_DEFAULTS = (0.25, 0.005)


@dataclass(frozen=True)
class MatchaConfig:
    level: str = "token"  # token | embedding
    variant: str = "full"
    insert_ratio: float = 0.2
    topk_ratio: float = 0.25
    eps_fraction: float = 0.005
    step_fraction: float = 0.25
    random_start: bool = True  # embedding level: PGD from a random point in the eps-ball
    steps: int = 5
    n_candidates: int = 8
    max_new_tokens: int = 256
    target_answer: str = "gold"  # gold | clean
    seed: int = 0

    @classmethod
    def for_dataset(cls, dataset: str, **overrides: Any) -> MatchaConfig:
        topk, eps = DATASET_DEFAULTS.get(dataset, FALLBACK_DEFAULTS)
        values = {"topk_ratio": topk, "eps_fraction": eps}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def validate(self) -> None:
        if self.level not in ("token", "embedding"):
            raise UserError(f"--level {self.level}: use token or embedding")
        if self.variant not in VARIANTS:
            raise UserError(f"--variant {self.variant}: use one of {', '.join(VARIANTS)}")
        if self.level == "embedding" and self.variant not in ("full", "cot-loss-only"):
            raise UserError(f"--variant {self.variant} is a token-level baseline; embedding level takes full or cot-loss-only")
        if self.target_answer not in ("gold", "clean"):
            raise UserError(f"--target-answer {self.target_answer}: use gold or clean")
        for name in ("insert_ratio", "topk_ratio", "eps_fraction", "step_fraction"):
            if not getattr(self, name) > 0:
                raise UserError(f"--{name.replace('_', '-')} must be positive")
        if self.steps < 0 or self.n_candidates < 1 or self.max_new_tokens < 1:
            raise UserError("--steps must be >= 0, --n-candidates and --max-new-tokens >= 1")



@dataclass(frozen=True)
class MatchaRunConfig:
    """One MATCHA attack run: data, attack level and variant, judges, hyper-parameters (None: the paper's
    default for the dataset, see :data:`robusteval.attacks.matcha.run.DATASET_DEFAULTS`)."""

    data: DataSpec = nested()
    level: str = option("token", choices=("token", "embedding"), help="token or embedding level")
    variant: str = option("full", choices=VARIANTS,
                          help="full, or a baseline: random-insert, random-locs, cot-loss-only, gcg-suffix")
    judge: str = option("arith", metavar="SPEC|arith",
                        help="reasoning judge: arith, a model spec, A+B (wrong if either says wrong), vote:A,B,C")
    semantic_judge: str = option("none", metavar="SPEC|none",
                                 help="judge that must accept each token replacement as meaning-preserving")
    target_answer: str = option("gold", choices=("gold", "clean", "auto"),
                                help="gold: attack correctly answered questions; clean: keep the model's own "
                                "answer; auto: gold when at least --min-correct are answered correctly, else clean")
    min_correct: int = option(4, help="target-answer auto: fewest correct clean answers for the gold target")
    attack_limit: int | None = option(None, help="attack at most the first N attackable examples", identity=False)
    insert_ratio: float | None = option(None, help="a: inserted tokens per question token (0.2)")
    topk_ratio: float | None = option(None, help="k: share of inserted positions replaced per step")
    epsilon: float | None = option(None, help="embedding level: eps as a fraction of the embedding scale")
    step_fraction: float | None = option(None, help="embedding level: PGD step as a fraction of eps (0.25)")
    random_start: bool = option(True, negate="--no-random-start",
                                help="embedding level: start PGD at the clean input (its gradient there is "
                                "exactly zero)")
    steps: int | None = option(None, help="j: optimisation steps (5)")
    n_candidates: int | None = option(None, help="replacement tokens re-scored per position (8)")
    max_new_tokens: int = option(256, help="generation budget per answer")
    exemplars: str | None = option(None, metavar="math|yesno|PATH",
                                   help="in-context exemplars (default: built-in set matching the answer type)")
    seed: int = option(DEFAULT_SEED, help="random seed (insertions, PGD starts), derived per example")

    def hyperparameters(self, target_answer: str | None = None) -> MatchaConfig:
        """The attack's resolved hyper-parameters (dataset defaults filled in)."""
        target = target_answer or ("gold" if self.target_answer == "auto" else self.target_answer)
        config = MatchaConfig.for_dataset(
            self.data.dataset, level=self.level, variant=self.variant, insert_ratio=self.insert_ratio,
            topk_ratio=self.topk_ratio, eps_fraction=self.epsilon, step_fraction=self.step_fraction,
            random_start=self.random_start, steps=self.steps, n_candidates=self.n_candidates,
            max_new_tokens=self.max_new_tokens, target_answer=target, seed=self.seed,
        )
        config.validate()
        return config


