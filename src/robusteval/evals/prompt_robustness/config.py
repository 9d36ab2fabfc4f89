"""``PromptRobustnessConfig``: which surface of the prompt is perturbed, by which methods, how many times.

Every value is checked when the config is built (a misspelt method or target gets the closest name), before any
model loads; what needs the data (the methods' language, the template having the surface) is checked by the
pipeline's preflight, still before a model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.attacks.wordsearch.settings import RankSettings
from robusteval.config import (
    ConfigError,
    check_at_least,
    check_choices,
    field_check,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.evals.prompt_robustness.surfaces import TARGETS
from robusteval.evals.summary_settings import LABEL_MODES, BootstrapSettings, LabelModeSettings
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.perturbations.registry import check_method_name
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.seeding import DEFAULT_SEED


def parse_methods(text: str) -> list[str]:
    """``C-keyboard,W-synonym``: method names, each once."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UserError("name at least one perturbation method")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(f"methods repeat: {', '.join(repeated)}")
    return names


@validated
@dataclass(frozen=True)
class PromptRobustnessConfig(BootstrapSettings, LabelModeSettings, GenerationFields, PromptFields):
    """``robusteval prompt-robustness``: one model as a classifier with the clean prompt and with k perturbed
    copies of one surface of it per method, on the same questions.

    The methods, k, label mode and bootstrap only change the summary, not a stored unit (each perturbed prompt and
    each answer is keyed by what it is), so a run directory can be re-summarised with more methods or prompts.
    """

    data: DataSpec = nested()
    #: How the prompt's text is perturbed (language, protected words, change budget, method resources).
    perturbation: PerturbationSpec = nested(default_factory=PerturbationSpec)
    #: A comma-separated string (as on the command line) or a sequence of method names.
    methods: str | tuple[str, ...] = option(metavar="M1,M2", identity=False,
                                            help="perturbation methods applied to the prompt (robusteval "
                                            "perturb --list: every C-/W-/S- method, zh and en)")
    target: str = option("instruction", choices=TARGETS,
                         help="the surface perturbed: the instruction paragraph, the system turn (--chat with "
                         "--system-prompt), the answer-format line, or the few-shot exemplars' text")
    prompts_per_method: int = option(3, metavar="K", identity=False,
                                     help="perturbed prompts per method (each seeded on its own)")
    generation: GenerationOptions = generation_block("chat", "system_prompt")
    prompt: PromptOptions = prompt_block("template")
    seed: int = option(DEFAULT_SEED, help="random seed of the perturbed prompts")

    def __post_init__(self) -> None:
        if not isinstance(self.methods, str):  # one spelling, as the summary and info record it
            object.__setattr__(self, "methods", ",".join(self.methods))
        check_choices(self)
        check_at_least(self, "prompts_per_method", 1, optional=False)
        self.check_bootstrap()
        names = _checked_methods(self)
        if self.target == "system" and not self.system_prompt:
            raise ConfigError(self, "system_prompt", "{target=system} perturbs the system turn: give the system "
                              "prompt (with {chat=True})")
        if self.perturbation.perturb_fields:
            raise ConfigError(self.perturbation, "perturb_fields", "prompt robustness perturbs the prompt, never an "
                              "example's fields (use {target=...})")
        self.perturbation.check_similarity_methods(self, names)

    def method_names(self) -> list[str]:
        return _method_names(self)


@validated
@dataclass(frozen=True)
class PromptSearchConfig(RankSettings, BootstrapSettings, GenerationFields, PromptFields):
    """``robusteval prompt-robustness --mode search``: the word-importance search over the instruction's words,
    lowering the accuracy on a seeded search set under a query budget; the found prompt scored on the held-out
    examples (the rest of the data)."""

    data: DataSpec = nested()
    #: The candidates' resources and constraints (``min_similarity``: the semantic gate; ``keep_pos``).
    perturbation: PerturbationSpec = nested(default_factory=PerturbationSpec)
    methods: str | tuple[str, ...] = option(metavar="M1,M2", help="perturbation methods giving each word's "
                                            "candidate replacements (C-*, W-*)")
    budget: int = option(500, help="search: query budget (a query = one model call on one example with one "
                         "candidate prompt; word ranking included)")
    search_size: int = option(8, metavar="N", help="search: examples searched on (seeded sample; the rest are "
                              "the held-out examples)")
    max_rate: float = option(0.3, help="search: largest share of the instruction's words changed")
    generation: GenerationOptions = generation_block("chat", "system_prompt")
    prompt: PromptOptions = prompt_block("template")
    # Not LabelModeSettings' label_mode: here it is what the search lowers, so it is in the run identity.
    label_mode: str = option("hard", choices=LABEL_MODES,
                             help="hard: the search lowers the accuracy; soft: the mean probability of the true "
                             "labels (needs a backend that scores)")
    seed: int = option(DEFAULT_SEED, help="random seed (the split, candidate order)")

    def __post_init__(self) -> None:
        if not isinstance(self.methods, str):
            object.__setattr__(self, "methods", ",".join(self.methods))
        check_choices(self)
        check_at_least(self, "budget", 1, optional=False)
        check_at_least(self, "search_size", 1, optional=False)
        self.check_bootstrap()
        if isinstance(self.max_rate, bool) or not 0 < self.max_rate <= 1:
            raise ConfigError(self, "max_rate", f"must be in (0, 1], got {self.max_rate!r}")
        if self.budget < self.search_size:
            raise ConfigError(self, "budget", f"{self.budget} queries cannot ask one prompt on the "
                              f"{{search_size={self.search_size}}} examples")
        names = _checked_methods(self)
        if self.perturbation.perturb_fields:
            raise ConfigError(self.perturbation, "perturb_fields", "the prompt search changes the instruction, "
                              "never an example's fields")
        self.perturbation.check_similarity_methods(self, names)

    def method_names(self) -> list[str]:
        return _method_names(self)


@validated
@dataclass(frozen=True)
class PromptSpreadConfig(BootstrapSettings, LabelModeSettings, GenerationFields, PromptFields):
    """``robusteval prompt-robustness --mode spread``: the same examples asked with a set of equivalent prompts
    (from ``prompts_file`` and/or ``n_formats`` formats of FormatSpread's grammar); min, max, mean, spread and the
    worst case per example."""

    data: DataSpec = nested()
    prompts_file: str | None = option(None, metavar="FILE", help="spread: equivalent prompts, one instruction per "
                                      "line or JSON lines {name, instruction, separator, casing, spacing, "
                                      "answer_field}")
    n_formats: int = option(12, metavar="N", help="spread: formats drawn from the grammar (separators, casing, "
                            "spacing, answer-field names; 0: the file's prompts only)")
    generation: GenerationOptions = generation_block("chat", "system_prompt")
    prompt: PromptOptions = prompt_block("template")
    seed: int = option(DEFAULT_SEED, help="random seed of the formats drawn")

    def __post_init__(self) -> None:
        check_choices(self)
        check_at_least(self, "n_formats", 0, optional=False)
        self.check_bootstrap()
        if self.n_formats == 0 and not self.prompts_file:
            raise ConfigError(self, "n_formats", "0 formats and no {prompts_file}: the spread has no prompts")


def _method_names(config: Any) -> list[str]:
    """``config.methods`` ("M1,M2") as names; a malformed list is the config's error on ``methods``."""
    try:
        return parse_methods(str(config.methods))
    except UserError as exc:
        raise ConfigError(config, "methods", str(exc)) from None


def _checked_methods(config: Any) -> list[str]:
    """:func:`_method_names`, each a registered perturbation method (a misspelt one fails here, with the closest
    name, before any model loads)."""
    names = _method_names(config)
    with field_check(config, "methods"):
        for name in names:
            check_method_name(name)
    return names
