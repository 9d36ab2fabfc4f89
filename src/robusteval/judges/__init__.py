"""Judges: who decides whether reasoning is wrong or a question kept its meaning (see ``base.py``).

Every name is imported on first use (:func:`robusteval.lazy.lazy_exports`): a module that needs one check (a
config's judge-spec check, a command's parser) reads it without loading every judge, so ``--help`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

if TYPE_CHECKING:
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
        check_judge_prompt,
        register_judge,
        with_cache,
    )
    from robusteval.judges.errortypes import (
        ERROR_TYPES,
        UNCLASSIFIED,
        ErrorType,
        ErrorTypeClassifier,
        attach_error_types,
        build_error_classifier,
        classify_errors,
        error_type_summary,
    )
    from robusteval.judges.grounding import GroundingJudge, check_grounding
    from robusteval.judges.llm import BinaryLLMJudge, parse_binary
    from robusteval.judges.prompt_files import PLACEHOLDERS, load_judge_prompt
    from robusteval.judges.reasoning import ReasoningJudge
    from robusteval.judges.semantic import AlwaysSameMeaning, SemanticJudge

__all__ = [
    "ERROR_TYPES",
    "JUDGE_STAGE",
    "PLACEHOLDERS",
    "REASONING",
    "SEMANTIC",
    "UNCLASSIFIED",
    "AllMustPass",
    "AlwaysSameMeaning",
    "ArithmeticJudge",
    "BinaryLLMJudge",
    "CachedJudge",
    "ErrorType",
    "ErrorTypeClassifier",
    "GroundingJudge",
    "Judge",
    "MajorityVote",
    "ReasoningItem",
    "ReasoningJudge",
    "SemanticItem",
    "SemanticJudge",
    "Verdict",
    "attach_error_types",
    "build_error_classifier",
    "build_judge",
    "check_arithmetic",
    "check_grounding",
    "check_judge_prompt",
    "classify_errors",
    "error_type_summary",
    "false_equations",
    "load_judge_prompt",
    "parse_binary",
    "register_judge",
    "with_cache",
]

__getattr__ = lazy_exports(__name__, {
    **dict.fromkeys(("ArithmeticJudge", "check_arithmetic", "false_equations"),
                    "robusteval.judges.arithmetic"),
    **dict.fromkeys(("JUDGE_STAGE", "REASONING", "SEMANTIC", "AllMustPass", "CachedJudge", "Judge", "MajorityVote",
                     "ReasoningItem", "SemanticItem", "Verdict", "build_judge", "check_judge_prompt", "register_judge",
                     "with_cache"),
                    "robusteval.judges.base"),
    **dict.fromkeys(("ERROR_TYPES", "UNCLASSIFIED", "ErrorType", "ErrorTypeClassifier", "attach_error_types",
                     "build_error_classifier", "classify_errors", "error_type_summary"),
                    "robusteval.judges.errortypes"),
    **dict.fromkeys(("GroundingJudge", "check_grounding"),
                    "robusteval.judges.grounding"),
    **dict.fromkeys(("BinaryLLMJudge", "parse_binary"),
                    "robusteval.judges.llm"),
    **dict.fromkeys(("PLACEHOLDERS", "load_judge_prompt"),
                    "robusteval.judges.prompt_files"),
    **dict.fromkeys(("ReasoningJudge",),
                    "robusteval.judges.reasoning"),
    **dict.fromkeys(("AlwaysSameMeaning", "SemanticJudge"),
                    "robusteval.judges.semantic"),
})
