"""The word-importance attack's run config (light to import: the CLI builds ``attack wordimportance``'s flags
from it without loading the pipeline)."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.attacks.wordsearch.settings import (
    BUDGET,
    N_SAMPLES,
    RATES,
    SAMPLE_TEMPERATURE,
    RankSettings,
    check_search_values,
)
from robusteval.config import (
    check_choices,
    field_check,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.perturbations.base import Language
from robusteval.perturbations.spec import CandidateSpec
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import ReasoningOptions, ThinkingFields, reasoning_block

COMMAND = "attack wordimportance"
#: The patent's nine Chinese methods, in its order: what ``combined`` runs for Chinese text.
NINE_METHODS = ("C-traditional", "C-pinyin", "C-radical", "C-morphonym", "C-shuffle", "W-homophone", "W-synonym",
                "W-wordembedding", "W-maskedlm")
ENGLISH_METHODS = ("C-keyboard", "C-ocr", "C-swap", "C-shuffle", "W-synonym", "W-wordembedding", "W-maskedlm")


def parse_rates(text: str) -> tuple[float, ...]:
    """``0.05,0.1`` -> (0.05, 0.1): sorted, distinct, each in (0, 1]."""
    try:
        rates = tuple(sorted({float(part) for part in text.split(",") if part.strip()}))
    except ValueError as exc:
        raise UserError(f"expected numbers like 0.05,0.1, got {text!r}") from exc
    if not rates or any(not 0 < r <= 1 for r in rates):
        raise UserError(f"every rate must be in (0, 1], got {text!r}")
    return rates


@validated
@dataclass(frozen=True)
class WordImportanceRunConfig(RankSettings, GenerationFields, PromptFields, ThinkingFields):
    """One word-importance attack run: data, the perturbation method(s) and their resources, the rates α,
    the query budget and the confidence estimator."""

    data: DataSpec = nested()
    #: Which language, fields and words, and the models methods read; default: each method's own settings.
    perturbation: CandidateSpec = nested(default_factory=CandidateSpec)
    method: str = option(metavar="METHOD|combined", help="the perturbation method")
    #: Also accepted as ``"0.05,0.1"`` (how the flag gives it); a sorted tuple of distinct floats once built.
    rates: tuple[float, ...] = option(RATES, metavar="A1,A2",
                                      help="perturbation rates alpha: the largest share of words that may change")
    budget: int = option(BUDGET, help="query budget per example (ranking included)")
    confidence: str = option("auto", choices=("auto", "logprob", "sample", "greedy"),
                             help="confidence estimator: auto = logprob when the backend scores, else sample")
    n_samples: int = option(N_SAMPLES, help="sample: answers sampled per text")
    prompt: PromptOptions = prompt_block("template")
    generation: GenerationOptions = generation_block("chat", "system_prompt", "temperature", temperature=SAMPLE_TEMPERATURE)
    thinking: ReasoningOptions = reasoning_block("max_thinking_tokens")
    max_drift: float | None = option(None, help="do not query candidates whose texts drift further than this from "
                                     "the originals (drift = 1 - cosine of all-MiniLM-L6-v2 embeddings with the "
                                     "drift extra, else the character edit ratio; the summary records which)")
    write_adv: str | None = option(None, metavar="FILE.jsonl", identity=False,
                                   help="also write the successful adversarial examples as a perturbed set "
                                   "(for robustness)")
    seed: int = option(DEFAULT_SEED, help="random seed (candidate order, sampled answers), derived per example")

    def __post_init__(self) -> None:
        text = self.rates if isinstance(self.rates, str) else ",".join(str(r) for r in self.rates)
        with field_check(self, "rates"):
            object.__setattr__(self, "rates", parse_rates(text))  # one normal form, whatever the caller gave
        from robusteval.perturbations.registry import check_method_name

        with field_check(self, "method"):
            check_method_name(self.method, extra=("combined",))
        check_choices(self)
        check_search_values(self)

    def method_names(self, language: Language) -> tuple[str, ...]:
        """The method, or every method of the language for ``combined``."""
        if self.method != "combined":
            return (self.method,)
        return NINE_METHODS if language == "zh" else ENGLISH_METHODS
