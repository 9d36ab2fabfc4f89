"""``prompt_spread``: the same examples asked with every prompt of a set of equivalent prompts (the template's
own, the file's, N formats drawn from FormatSpread's grammar); accuracy per prompt, min / max / mean, the spread
with its paired interval and the worst case per example (:mod:`robusteval.evals.prompt_robustness.spread`).
Every answer is a ``classify`` unit keyed by the prompt (a template hash of its own): a rerun asks nothing."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.config import field_check
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    predicted_label,
    template_for,
)
from robusteval.evals.prompt_robustness.config import PromptSpreadConfig
from robusteval.evals.prompt_robustness.formats import (
    Format,
    PromptChoice,
    read_prompts,
    sample_formats,
    spread_prompts,
)
from robusteval.evals.prompt_robustness.outcomes import KEY, encode
from robusteval.lifecycle import public_entry
from robusteval.models import Backend
from robusteval.models.identity import backend_identity
from robusteval.store import RunStore

COMMAND = "prompt-robustness spread"
UNIT = "example (every prompt asks the same n examples: paired)"


def _plan(config: PromptSpreadConfig, examples: list[Example] | None = None
          ) -> tuple[list[Example], ClassificationTemplate, list[PromptChoice], dict[str, ClassificationTemplate]]:
    examples = examples if examples is not None else config.data.load()
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples")
    template = template_for(config.template, config.data.dataset, examples)
    choices = [PromptChoice("original", None, Format())]
    if config.prompts_file:
        with field_check(config, "prompts_file"):
            choices += read_prompts(config.prompts_file)
    if config.n_formats:
        with field_check(config, "n_formats"):
            choices += [PromptChoice(f"format{i + 1}", None, fmt)
                        for i, fmt in enumerate(sample_formats(template, config.n_formats, config.seed))]
    with field_check(config, "prompts_file" if config.prompts_file else "template"):
        templates = spread_prompts(template, choices)
    return examples, template, choices, templates


def prompt_spread_identity(config: PromptSpreadConfig, model: dict[str, Any] | None,
                           examples: Sequence[Example]) -> dict[str, Any]:
    from robusteval.lifecycle import run_identity

    _, template, _, _ = _plan(config, list(examples))
    return run_identity(COMMAND, config, model, **template.identity())


def _preflight(arguments: Mapping[str, Any]) -> None:
    _plan(arguments["config"])


@public_entry(preflight=_preflight)
def prompt_spread(config: PromptSpreadConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
                  batch_size: int = 8) -> dict[str, Any]:
    """Accuracy of ``backend`` on ``config.data`` with every prompt of the set, and the set's spread. Resumable."""
    from robusteval.evals.prompt_robustness.pipeline import ask_every_prompt
    from robusteval.evals.prompt_robustness.spread import spread_metrics
    from robusteval.lifecycle import finish, run_identity, store_for
    from robusteval.seeding import derive_seed

    examples, template, choices, templates = _plan(config)
    identity = run_identity(COMMAND, config, backend_identity(backend), **template.identity())
    with store_for(store, identity, {"limit": config.data.limit, "batch_size": batch_size}) as run:
        soft: bool | None = True if config.label_mode == "soft" else None
        classifiers: dict[str, LabelClassifier] = {}
        for name, prompt_template in templates.items():
            classifiers[name] = LabelClassifier(backend, prompt_template, run, soft=soft, chat=config.chat,
                                                system_prompt=config.system_prompt)
            soft = classifiers[name].soft
        answers = ask_every_prompt(run, classifiers, examples, batch_size)
        correct = {name: [predicted_label(r, config.label_mode) == ex.answer
                          for r, ex in zip(records, examples, strict=True)] for name, records in answers.items()}
        metrics = spread_metrics(correct, seed=derive_seed(config.bootstrap_seed, "prompt-spread-bootstrap"),
                                 n_resamples=config.bootstrap)
        for choice in choices:
            metrics["prompts"][choice.name].update(
                instruction=choice.instruction, format=choice.fmt.describe(),
                prefix=templates[choice.name].filled_prefix(), prompt=templates[choice.name].prompt)
        summary = {
            "mode": "spread", "model": backend.name, "dataset": config.data.dataset,
            "data_file": config.data.data_file, "template": template.name, "label_mode": config.label_mode,
            "prompts_file": config.prompts_file, "n_formats": config.n_formats, "unit": UNIT, **metrics,
            "n_unparsed": {name: sum(1 for r in records if predicted_label(r, config.label_mode) is None)
                           for name, records in answers.items()},
            "skip_reasons": {}, "exclusions": {}, KEY: encode([ex.id for ex in examples], correct),
        }
        return finish(run, summary, seeds={"seed": config.seed, "bootstrap_seed": config.bootstrap_seed})
