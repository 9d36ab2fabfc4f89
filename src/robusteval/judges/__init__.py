"""Judges: who decides whether reasoning is wrong or a question kept its meaning (see ``base.py``)."""

from robusteval.judges.arithmetic import ArithmeticJudge, check_arithmetic, false_equations
from robusteval.judges.base import (
    JUDGE_STAGE,
    REASONING,
    SEMANTIC,
    AllMustPass,
    CachedJudge,
    Judge,
    MajorityVote,
    ReasoningItem,
    SemanticItem,
    Verdict,
    build_judge,
    register_judge,
    with_cache,
)
from robusteval.judges.llm import BinaryLLMJudge, parse_binary
from robusteval.judges.reasoning import ReasoningJudge
from robusteval.judges.semantic import AlwaysSameMeaning, SemanticJudge

__all__ = [
    "JUDGE_STAGE",
    "REASONING",
    "SEMANTIC",
    "AllMustPass",
    "AlwaysSameMeaning",
    "ArithmeticJudge",
    "BinaryLLMJudge",
    "CachedJudge",
    "Judge",
    "MajorityVote",
    "ReasoningItem",
    "ReasoningJudge",
    "SemanticItem",
    "SemanticJudge",
    "Verdict",
    "build_judge",
    "check_arithmetic",
    "false_equations",
    "parse_binary",
    "register_judge",
    "with_cache",
]
