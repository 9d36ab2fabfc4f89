"""``PromptRobustnessConfig``: which surface of the prompt is perturbed, by which methods, how many times.

Every value is checked when the config is built (a misspelt method or target gets the closest name), before any
model loads; what needs the data (the methods' language, the template having the surface) is checked by the
pipeline's preflight, still before a model loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import (
    ConfigError,
    check_at_least,
    check_chat,
    check_choices,
    field_check,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.evals.classification import check_template_source
from robusteval.evals.prompt_robustness.surfaces import TARGETS
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
class PromptRobustnessConfig:
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
    template: str | None = option(None, metavar="nli-zh|yesno|text|PATH",
                                  help="classification prompt template (default: nli-zh for OCNLI, yesno for yes/no "
                                  "labels, else text)")
    chat: bool = option(False, help="prompt through the model's chat template (hf) or /chat/completions (openai)")
    system_prompt: str | None = option(None, help="--chat: a system turn before it (the target of --target system)")
    label_mode: str = option("hard", choices=("hard", "soft"), identity=False,
                             help="which label the accuracy uses: read from the generation, or argmax of label "
                             "log-probs (needs a backend that scores)")
    bootstrap: int = option(2000, help="bootstrap resamples (over questions) for the PDR and RB-index intervals",
                            identity=False)
    seed: int = option(DEFAULT_SEED, help="random seed of the perturbed prompts")
    bootstrap_seed: int = option(DEFAULT_SEED, help="seed of the bootstrap intervals (independent of --seed)",
                                 identity=False)

    def __post_init__(self) -> None:
        if not isinstance(self.methods, str):  # one spelling, as the summary and info record it
            object.__setattr__(self, "methods", ",".join(self.methods))
        check_choices(self)
        check_chat(self)
        check_at_least(self, "prompts_per_method", 1, optional=False)
        check_at_least(self, "bootstrap", 0, optional=False)
        names = self.method_names()
        with field_check(self, "methods"):  # a misspelt method fails here, with the closest name
            for name in names:
                check_method_name(name)
        with field_check(self, "template"):
            check_template_source(self.template)
        if self.target == "system" and not self.system_prompt:
            raise ConfigError(self, "system_prompt", "{target=system} perturbs the system turn: give the system "
                              "prompt (with {chat=True})")
        if self.perturbation.perturb_fields:
            raise ConfigError(self.perturbation, "perturb_fields", "prompt robustness perturbs the prompt, never an "
                              "example's fields (use {target=...})")
        self.perturbation.check_similarity_methods(self, names)

    def method_names(self) -> list[str]:
        try:
            return parse_methods(str(self.methods))
        except UserError as exc:
            raise ConfigError(self, "methods", str(exc)) from None
