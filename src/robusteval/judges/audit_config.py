"""The judge audit's config (``robusteval judges audit``, :func:`robusteval.judges.audit.audit_judge`), apart from
the audit so that building the command's options loads no judge."""

from __future__ import annotations

import os
from dataclasses import dataclass

from robusteval.config import ConfigError, option, validated
from robusteval.judging import JudgeFields, JudgeOptions, judge_block

#: The judge block's keys the audit reads: each a plain flag of ``judges audit`` (the settings it is about).
AUDIT_JUDGE_KEYS = ("judge", "error_classifier", "judge_chat", "judge_prompt", "judge_retries",
                    "judge_max_thinking_tokens")


@validated
@dataclass(frozen=True)
class AuditConfig(JudgeFields):
    """A judge audit: which labelled set, and in ``judging`` which judge (required) and the optional LLM
    error-type classifier (also scored on its own on every incorrect item)."""

    labelled: str = option(metavar="FILE.jsonl", identity=False,
                           help="labelled chains of thought (format: docs/judges.md); its content hash is in the "
                           "run identity")
    # The prompt file's content, not its path, is in the run identity (audit_identity), as it always was.
    judging: JudgeOptions = judge_block(*AUDIT_JUDGE_KEYS, unrecorded=("judge_prompt",), shown=AUDIT_JUDGE_KEYS)

    def __post_init__(self) -> None:
        """The judge block checks its own values when built; the audit needs a judge and the labelled file."""
        if self.judge is None:
            raise ConfigError(self, "judge", "required: the judge to audit (arith, grounding, a model spec, A+B, "
                              "vote:A,B,C)")
        if not os.path.isfile(self.labelled):
            raise ConfigError(self, "labelled", f"no such file: {self.labelled}")

