"""The answer-first eval's config (``robusteval eval``), apart from its pipeline so that building the command's
options (``robusteval eval --help``) and reading a study plan load no pipeline, no model code and no numpy."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import check_at_least, check_chat, field_check, nested, option, validated
from robusteval.data.answers import MATH_GRADERS, check_math_grader
from robusteval.data.answers.graders import MATH_GRADER_HELP
from robusteval.data.spec import DataSpec
from robusteval.prompts.answer_first import check_exemplars
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import ReasoningOptions


@validated
@dataclass(frozen=True)
class EvalConfig:
    """``robusteval eval``: answer-first accuracy of one model on one dataset."""

    data: DataSpec = nested()
    exemplars: str | None = option(None, metavar="math|yesno|PATH",
                                   help="in-context exemplars (default: built-in set matching the answer type)")
    max_new_tokens: int = option(256, help="generation budget per answer")
    chat: bool = option(False, help="prompt through the model's chat template (hf) or /chat/completions (openai): "
                        "a system prompt, the exemplars as earlier turns, the question as the last user turn")
    system_prompt: str | None = option(None, help="--chat: the system prompt (default: asks for the answer "
                                       "first, then the reasoning; '' for no system turn)")
    seed: int = option(DEFAULT_SEED, help="random seed (recorded; greedy decoding ignores it)")
    # In the identity: every stored answer holds its verdict, so one run directory never mixes graders.
    math_grader: str = option("builtin", choices=MATH_GRADERS, help=MATH_GRADER_HELP)
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)

    def __post_init__(self) -> None:
        check_chat(self)
        check_at_least(self, "max_new_tokens", 1, optional=False)
        with field_check(self, "math_grader"):
            check_math_grader(self.math_grader)
        with field_check(self, "exemplars"):
            check_exemplars(self.exemplars)
