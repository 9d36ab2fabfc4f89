"""The answer-first eval's config (``robusteval eval``), apart from its pipeline so that building the command's
options (``robusteval eval --help``) and reading a study plan load no pipeline, no model code and no numpy."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import field_check, nested, option, validated
from robusteval.data.answers import MATH_GRADERS, check_math_grader
from robusteval.data.answers.graders import MATH_GRADER_HELP
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import ReasoningOptions


@validated
@dataclass(frozen=True)
class EvalConfig(GenerationFields, PromptFields):
    """``robusteval eval``: answer-first accuracy of one model on one dataset."""

    data: DataSpec = nested()
    prompt: PromptOptions = prompt_block("exemplars")
    generation: GenerationOptions = generation_block("chat", "system_prompt", "max_new_tokens", max_new_tokens=256)
    seed: int = option(DEFAULT_SEED, help="random seed (recorded; greedy decoding ignores it)")
    # In the identity: every stored answer holds its verdict, so one run directory never mixes graders.
    math_grader: str = option("builtin", choices=MATH_GRADERS, help=MATH_GRADER_HELP)
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)

    def __post_init__(self) -> None:
        with field_check(self, "math_grader"):
            check_math_grader(self.math_grader)
