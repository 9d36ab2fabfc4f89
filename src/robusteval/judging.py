"""Who judges a method's outputs: one typed block, :class:`JudgeOptions`, nested as ``judging`` in the configs of
the methods that judge (``attack matcha``, ``transfer``), declared and validated once, here.

Light to import (the judges' own modules load only when a spec is checked). A method names the keys it reads
and its defaults through :func:`judge_block`, as for :mod:`robusteval.models.generation`; the keys stay flat on
the command line, in ``--config`` files (or a ``[judging]`` table), study files and the run identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.config import (
    CONFIG_KEY,
    MORE,
    WHEN_SET,
    check_at_least,
    check_choices,
    field_check,
    filled,
    option,
    shared_block,
    validated,
)

#: Every setting of the block, in declaration order.
JUDGE_KEYS = ("judge", "semantic_judge", "judge_prompt", "semantic_judge_prompt", "judge_retries",
              "unreadable_verdicts", "judge_max_thinking_tokens", "judge_chat", "error_classifier")
#: What an LLM verdict still unreadable after its re-asks counts as.
UNREADABLE_VERDICTS = ("abstain", "authors-fallback")


@validated
@dataclass(frozen=True)
class JudgeOptions:
    """The judges of a method's outputs and how they are asked. Unset (None): the method's default (the config
    reference lists it per method)."""

    judge: str | None = option(None, metavar="SPEC|arith",
                               help="reasoning judge: arith, grounding, embedded, a model spec, A+B (wrong if either "
                               "says wrong), vote:A,B,C (transfer: unset, the source run's; judges audit: the judge "
                               "audited)")
    semantic_judge: str | None = option(None, metavar="SPEC|none",
                                        help="judge that must accept each token replacement as meaning-preserving")
    judge_prompt: str | None = option(None, cli=MORE, metavar="FILE", identity=WHEN_SET,
                                      help="the reasoning LLM judge's prompt: a string.Template file with $question, "
                                      "$reference and $candidate ($$ for a literal $); e.g. the MATCHA authors' "
                                      "criteria prompt wrapped as docs/matcha.md shows")
    semantic_judge_prompt: str | None = option(None, cli=MORE, metavar="FILE", identity=WHEN_SET,
                                               help="the semantic LLM judge's prompt: a string.Template file with "
                                               "$original and $perturbed")
    judge_retries: int | None = option(None, cli=CONFIG_KEY, metavar="N", identity=WHEN_SET,
                                       help="re-ask an LLM judge whose verdict cannot be read up to N times (sampled "
                                       "at temperature 0.7), then count it as an abstention (default 0). attack "
                                       "matcha: then as --unreadable-verdicts says; under --count authors re-asked "
                                       "at temperature 0 with the same prompt, as the authors' code, which re-asks "
                                       "without limit (default 10)")
    unreadable_verdicts: str | None = option(None, cli=CONFIG_KEY, choices=UNREADABLE_VERDICTS,
                                             metavar="abstain|authors-fallback", identity=WHEN_SET,
                                             help="an LLM verdict still unreadable after its re-asks: abstain (the "
                                             "example is counted apart as unjudged; the default) or, under --count "
                                             "authors, authors-fallback: read as 'correct', as the authors' local "
                                             "fallback reads every verdict (their bug: it reads the prompt's "
                                             "'Rating: 1')")
    judge_max_thinking_tokens: int | None = option(None, cli=MORE, metavar="N", identity=WHEN_SET,
                                                   help="a thinking LLM judge's trace budget before its generated "
                                                   "verdict (its chat template names think tags; --judge-chat) "
                                                   "(default 2048)")
    judge_chat: bool = option(False, cli=MORE, help="ask LLM judges through their chat template (hf) or chat "
                              "endpoint (openai), the judge prompt as one user turn")
    error_classifier: str | None = option(None, cli=MORE, metavar="MODEL-SPEC",
                                          help="an LLM that names the error type of successes no checker can "
                                          "(arith: wrong calculation, grounding: wrong information or irrelevant "
                                          "information); unset: those stay unclassified. judges audit: types the "
                                          "flagged items, and is also scored on its own on every incorrect item")

    def __post_init__(self) -> None:
        """Refuse a spec or prompt file that cannot work, before any model loads (judge specs are part of the run
        identity)."""
        from robusteval.judges.base import REASONING, SEMANTIC, check_judge_prompt, check_judge_spec
        from robusteval.judges.errortypes import check_error_classifier_spec

        check_choices(self)
        check_at_least(self, "judge_retries", 0)
        check_at_least(self, "judge_max_thinking_tokens", 1)
        for name, task in (("judge", REASONING), ("semantic_judge", SEMANTIC)):
            if getattr(self, name) is not None:
                with field_check(self, name):
                    check_judge_spec(getattr(self, name), task=task)
        with field_check(self, "error_classifier"):
            check_error_classifier_spec(self.error_classifier)
        with field_check(self, "judge_prompt"):
            check_judge_prompt(self.judge_prompt, REASONING)
        with field_check(self, "semantic_judge_prompt"):
            check_judge_prompt(self.semantic_judge_prompt, SEMANTIC)

    def reasoning_spec(self) -> str:
        """``judge`` of a method whose default fills it (``judge_block(judge=...)``)."""
        return str(filled(self, "judge"))

    def semantic_spec(self) -> str:
        """``semantic_judge`` of a method whose default fills it (``judge_block(semantic_judge=...)``)."""
        return str(filled(self, "semantic_judge"))



def judge_block(*keys: str, unrecorded: tuple[str, ...] = (), shown: tuple[str, ...] = (), **defaults: Any) -> Any:
    """The ``judging`` field of a method's config: the keys it reads and its defaults of those left unset (see
    :func:`robusteval.models.generation.generation_block`); ``unrecorded``: the keys its run identity leaves out
    (it records what they resolve to instead: ``judges audit``, a prompt file's content hash); ``shown``: the keys
    its command shows as plain flags in ``--help`` (``judges audit``, a command about the judge)."""
    return shared_block(JudgeOptions, JUDGE_KEYS, keys, defaults, unrecorded=unrecorded, shown=shown)


class JudgeFields:
    """Read access to a config's ``judging`` block under the flat names (``config.judge``)."""

    judging: JudgeOptions

    @property
    def judge(self) -> str | None:
        return self.judging.judge

    @property
    def semantic_judge(self) -> str | None:
        return self.judging.semantic_judge

    @property
    def judge_prompt(self) -> str | None:
        return self.judging.judge_prompt

    @property
    def semantic_judge_prompt(self) -> str | None:
        return self.judging.semantic_judge_prompt

    @property
    def judge_retries(self) -> int | None:
        return self.judging.judge_retries

    @property
    def unreadable_verdicts(self) -> str | None:
        return self.judging.unreadable_verdicts

    @property
    def judge_max_thinking_tokens(self) -> int | None:
        return self.judging.judge_max_thinking_tokens

    @property
    def judge_chat(self) -> bool:
        return self.judging.judge_chat

    @property
    def error_classifier(self) -> str | None:
        return self.judging.error_classifier
