"""The transfer's config (``robusteval transfer``), apart from :mod:`robusteval.attacks.matcha.transfer` so that
building the command's options (``robusteval transfer --help``) loads no pipeline and no judge: the judge specs are
checked when a config is built."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import (
    check_choices,
    check_positive,
    option,
    validated,
)
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.judging import JudgeFields, JudgeOptions, judge_block
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.seeding import DEFAULT_SEED


@validated
@dataclass(frozen=True)
class TransferConfig(GenerationFields, JudgeFields, PromptFields):
    """Replay a MATCHA run's successful perturbed questions on another model (``robusteval transfer``)."""

    # The source is identified by its own stored identity (the directory may move), the limit may grow.
    source: str = option(flag="--from", metavar="DIR", identity=False,
                         help="run directory of a token-level 'attack matcha' run (config key: source)")
    seed: int = option(DEFAULT_SEED, help="sampling seed sent with every request")
    judging: JudgeOptions = judge_block("judge", "judge_chat", "error_classifier")
    limit: int | None = option(None, help="transfer the first N successes", identity=False)
    prompt: PromptOptions = prompt_block("exemplars", unrecorded=("exemplars",))
    answer_type: str | None = option(None, choices=("number", "yesno", "math", "text", "label"),
                                     help="how answers are compared; unset: inferred from the source run")
    generation: GenerationOptions = generation_block("chat", "system_prompt", "max_new_tokens", "temperature",
                                                     temperature=0.7)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse values that cannot run (checked when built): judge specs are part of the run identity, so
        they are refused before a run directory is made (see MatchaRunConfig)."""
        check_choices(self)
        check_positive(self, "limit")
