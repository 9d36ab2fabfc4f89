"""The robustness eval's config (``robusteval robustness``) and its perturbed sets, apart from the pipeline so that
building the command's options (``robusteval robustness --help``) and reading a study plan load no pipeline."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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
from robusteval.evals.summary_settings import BootstrapSettings, LabelModeSettings
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.perturbations.registry import check_method_name
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import ReasoningOptions, ThinkingFields, reasoning_block


@dataclass(frozen=True)
class SetSpec:
    name: str
    method: str | None = None  # a perturbation method run on the fly
    path: str | None = None  # or a perturbed copy on disk (robusteval's example format)


def parse_sets(text: str) -> list[SetSpec]:
    """``C-homophone,W-synonym,adv=attack/adv.jsonl``: method names, NAME=FILE, or a .jsonl path."""
    specs: list[SetSpec] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, eq, path = part.partition("=")
        if eq:
            specs.append(SetSpec(name.strip(), path=path.strip()))
        elif part.endswith(".jsonl") or os.path.sep in part:
            specs.append(SetSpec(Path(part).stem, path=part))
        else:
            specs.append(SetSpec(part, method=part))
    names = [s.name for s in specs]
    if not specs:
        raise UserError("name at least one perturbation method or perturbed file")
    if len(set(names)) != len(names):
        raise UserError(f"set names repeat: {', '.join(names)}")
    for spec in specs:
        if spec.path is not None and not os.path.isfile(spec.path):
            raise UserError(f"set {spec.name}: no such file: {spec.path}")
    return specs


@validated
@dataclass(frozen=True)
class RobustnessConfig(BootstrapSettings, LabelModeSettings, GenerationFields, PromptFields, ThinkingFields):
    """``robusteval robustness``: one model as a classifier on the original examples and each perturbed set.

    The sets, label mode and bootstrap only change the summary, not a stored unit, so a run directory can be
    re-summarised with more sets or another label mode (they are not part of the run identity).
    """

    data: DataSpec = nested()
    #: How generated sets perturb (language, protections, change budget); default: each method's own settings.
    perturbation: PerturbationSpec = nested(default_factory=PerturbationSpec)
    #: A comma-separated string (as on the command line) or a sequence of entries.
    sets: str | tuple[str, ...] = option(metavar="M1,M2,NAME=FILE", help="perturbed sets: method names or files",
                                         identity=False)
    prompt: PromptOptions = prompt_block("template")
    generation: GenerationOptions = generation_block("chat", "system_prompt")
    thinking: ReasoningOptions = reasoning_block("max_thinking_tokens")
    seed: int = option(DEFAULT_SEED, help="random seed of the generated sets (per example and field)")
    min_changed: int = option(1, metavar="N", identity=False,
                              help="a set that changed fewer than N texts is left out of the RB-index (named in a "
                              "line under the table; default 1: a set that changed nothing)")
    changed_only: bool = option(False, identity=False,
                                help="also report each set's accuracy and drop on the texts it changed only")
    labels: str | None = option(None, metavar="LABELS.jsonl", identity=False,
                                help="labels store of `perturb labels`: each set's share of edits judged same "
                                "meaning, beside its accuracy")
    preserved_only: bool = option(False, identity=False,
                                  help="with --labels: also the accuracies and RB-index over the edits labelled "
                                  "same meaning only (reported beside the headline)")

    def __post_init__(self) -> None:
        if not isinstance(self.sets, str):  # one spelling, as the summary and info record it
            object.__setattr__(self, "sets", ",".join(self.sets))
        check_choices(self)
        self.check_bootstrap()
        check_at_least(self, "min_changed", 0, optional=False)
        if self.preserved_only and not self.labels:
            raise ConfigError(self, "preserved_only", "needs labels (a labels store of `perturb labels`)")
        if self.labels is not None and not os.path.isfile(self.labels):
            raise ConfigError(self, "labels", f"no such labels store: {self.labels}")
        specs = self.set_specs()
        with field_check(self, "sets"):  # a misspelt method fails here, with the closest name, before any model loads
            for spec in specs:
                if spec.method is not None:
                    check_method_name(spec.method)
        self.perturbation.check_similarity_methods(self, [spec.method for spec in specs if spec.method])

    def set_specs(self) -> list[SetSpec]:
        try:
            return parse_sets(str(self.sets))
        except UserError as exc:
            raise ConfigError(self, "sets", str(exc)) from None
