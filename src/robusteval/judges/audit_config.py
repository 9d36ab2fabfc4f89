"""The judge audit's config (``robusteval judges audit``, :func:`robusteval.judges.audit.audit_judge`), apart from
the audit so that building the command's options loads no judge."""

from __future__ import annotations

import os
from dataclasses import dataclass

from robusteval.config import ConfigError, check_at_least, field_check, option, validated


@validated
@dataclass(frozen=True)
class AuditConfig:
    """A judge audit: which judge, which labelled set, and the optional LLM error-type classifier."""

    judge: str = option(metavar="SPEC", help="the judge to audit: arith, grounding, a model spec, A+B (wrong if "
                        "either says wrong), vote:A,B,C")
    labelled: str = option(metavar="FILE.jsonl", identity=False,
                           help="labelled chains of thought (format: docs/judges.md); its content hash is in the "
                           "run identity")
    error_classifier: str | None = option(None, metavar="MODEL-SPEC",
                                          help="an LLM that names the error type of flagged items no checker can; "
                                          "also scored on its own on every incorrect item")
    judge_chat: bool = option(False, help="ask LLM judges through their chat template (hf) or chat endpoint "
                              "(openai), the judge prompt as one user turn")
    judge_prompt: str | None = option(None, metavar="FILE", identity=False,
                                      help="a string.Template file replacing the LLM judges' built-in prompt "
                                      "($question, $reference, $candidate; $candidate required; a literal $ is "
                                      "$$); its content hash is in the run identity")
    judge_retries: int | None = option(None, metavar="N", identity="when-set",
                                       help="re-ask an LLM judge whose generated verdict cannot be read up to N "
                                       "times (sampled), then count it as an abstention (default 0)")
    judge_max_thinking_tokens: int | None = option(None, metavar="N", identity="when-set",
                                                   help="a thinking LLM judge's trace budget before its generated "
                                                   "verdict (its chat template names think tags; --judge-chat) "
                                                   "(default 2048)")

    def __post_init__(self) -> None:
        from robusteval.judges.base import REASONING, check_judge_prompt, check_judge_spec
        from robusteval.judges.errortypes import check_error_classifier_spec

        with field_check(self, "judge"):
            check_judge_spec(self.judge, task=REASONING)
        with field_check(self, "judge_prompt"):
            check_judge_prompt(self.judge_prompt, REASONING)
        if self.judge_retries is not None and self.judge_retries < 0:
            raise ConfigError(self, "judge_retries", f"{self.judge_retries} is negative; give 0 (ask once) or more")
        check_at_least(self, "judge_max_thinking_tokens", 1)
        with field_check(self, "error_classifier"):
            check_error_classifier_spec(self.error_classifier)
        if not os.path.isfile(self.labelled):
            raise ConfigError(self, "labelled", f"no such file: {self.labelled}")
