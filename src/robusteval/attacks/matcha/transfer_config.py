"""The transfer's config (``robusteval transfer``), apart from :mod:`robusteval.attacks.matcha.transfer` so that
building the command's options (``robusteval transfer --help``) loads no pipeline and no judge: the judge specs are
checked when a config is built."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import (
    check_at_least,
    check_chat,
    check_choices,
    check_positive,
    field_check,
    option,
    validated,
)
from robusteval.prompts.answer_first import check_exemplars
from robusteval.seeding import DEFAULT_SEED


@validated
@dataclass(frozen=True)
class TransferConfig:
    """Replay a MATCHA run's successful perturbed questions on another model (``robusteval transfer``)."""

    # The source is identified by its own stored identity (the directory may move), the limit may grow.
    source: str = option(flag="--from", metavar="DIR", identity=False,
                         help="run directory of a token-level 'attack matcha' run (config key: source)")
    temperature: float = option(0.7, help="sampling temperature (paper: 0.7)")
    seed: int = option(DEFAULT_SEED, help="sampling seed sent with every request")
    judge: str | None = option(None, metavar="SPEC|arith",
                               help="reasoning judge; unset: the source run's judge. arith, grounding, a model spec, A+B, "
                               "vote:A,B,C")
    limit: int | None = option(None, help="transfer the first N successes", identity=False)
    max_new_tokens: int | None = option(None, help="generation budget; unset: the source run's")
    exemplars: str | None = option(None, metavar="math|yesno|PATH", identity=False,
                                   help="the source run's exemplar set, where it cannot be found by itself (must "
                                   "be the same; its prompt prefix hash is in the identity)")
    answer_type: str | None = option(None, choices=("number", "yesno", "math", "text", "label"),
                                     help="how answers are compared; unset: inferred from the source run")
    chat: bool = option(False, help="prompt the target model through its chat template (hf) or /chat/completions "
                        "(openai): a system prompt, the exemplars as earlier turns, the question as the last one")
    system_prompt: str | None = option(None, help="--chat: the system prompt (default: asks for the answer first, "
                                       "then the reasoning; '' for no system turn)")
    judge_chat: bool = option(False, help="ask LLM judges through their chat template (hf) or chat endpoint "
                              "(openai), the judge prompt as one user turn")
    error_classifier: str | None = option(None, metavar="MODEL-SPEC",
                                          help="an LLM that names the error type of successes no checker can; "
                                          "unset: those stay unclassified")

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse values that cannot run (checked when built): judge specs are part of the run identity, so
        they are refused before a run directory is made (see MatchaRunConfig)."""
        from robusteval.judges.base import REASONING, check_judge_spec
        from robusteval.judges.errortypes import check_error_classifier_spec

        check_choices(self)
        check_positive(self, "limit")
        check_positive(self, "max_new_tokens")
        check_at_least(self, "temperature", 0, optional=False)
        check_chat(self)
        if self.judge is not None:
            with field_check(self, "judge"):
                check_judge_spec(self.judge, task=REASONING)
        with field_check(self, "error_classifier"):
            check_error_classifier_spec(self.error_classifier)
        with field_check(self, "exemplars"):
            check_exemplars(self.exemplars)
