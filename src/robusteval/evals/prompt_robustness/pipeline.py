"""Accuracy with the clean prompt and with each perturbed prompt, on the same questions: the
``prompt-robustness`` pipeline.

Every question is asked with every prompt (paired: n counts questions, the same n for each prompt); each answer
is a unit of the ``classify`` stage keyed by the model, the prompt (its own template hash) and the question, so a
rerun asks nothing twice and a perturbed prompt the method left unchanged reuses the clean prompt's answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.config import field_check
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    example_fields,
    predicted_label,
    template_for,
)
from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig
from robusteval.evals.prompt_robustness.generate import PerturbedPrompt, perturbed_prompts
from robusteval.evals.prompt_robustness.outcomes import KEY, encode
from robusteval.evals.prompt_robustness.surfaces import PromptSurfaces, PromptVariant, variant_template
from robusteval.lifecycle import public_entry
from robusteval.models import Backend
from robusteval.models.identity import backend_identity
from robusteval.perturbations.base import Language, detect_language
from robusteval.store import RunStore

COMMAND = "prompt-robustness"
CLASSIFY_STAGE = "classify"
#: What n counts, recorded in the summary.
UNIT = "question (every prompt asks the same n questions: paired)"


@dataclass(frozen=True)
class _Plan:
    """What a run reads, loaded and checked before any model loads."""

    examples: list[Example]
    template: ClassificationTemplate
    surfaces: PromptSurfaces
    pieces: dict[str, str]
    language: Language
    methods: list[str]


def _plan(config: PromptRobustnessConfig, examples: Sequence[Example] | None = None) -> _Plan:
    examples = list(examples) if examples is not None else config.data.load()
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples")
    template = template_for(config.template, config.data.dataset, examples)
    surfaces = PromptSurfaces.of(template, config.system_prompt if config.chat else None)
    with field_check(config, "target"):  # the template must have the surface
        pieces = surfaces.pieces(config.target)
    spec = config.perturbation
    language: Language = (spec.language if spec.language != "auto"  # type: ignore[assignment]
                          else detect_language(" ".join(pieces.values())))
    methods = config.method_names()
    with field_check(config, "methods"):  # each method for the prompt's language, with what it needs
        for method in methods:
            spec.check_method(method, language)
    return _Plan(examples, template, surfaces, pieces, language, methods)


def prompt_robustness_identity(config: PromptRobustnessConfig, model: dict[str, Any] | None,
                               examples: Sequence[Example]) -> dict[str, Any]:
    """The run identity; reads and checks the template, its surface and the methods (cheap, no model)."""
    from robusteval.lifecycle import run_identity

    plan = _plan(config, examples)
    return run_identity(COMMAND, config, model, **plan.template.identity(), language=plan.language)


def prompt_robustness_info(config: PromptRobustnessConfig, batch_size: int) -> dict[str, Any]:
    """What the run records beside its identity."""
    return {"limit": config.data.limit, "methods": config.methods, "prompts_per_method": config.prompts_per_method,
            "label_mode": config.label_mode, "batch_size": batch_size}


def _preflight(arguments: Mapping[str, Any]) -> None:
    _plan(arguments["config"])


@public_entry(preflight=_preflight)
def prompt_robustness(config: PromptRobustnessConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
                      load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> dict[str, Any]:
    """Accuracy of ``backend`` (as a classifier) on ``config.data`` with the clean prompt and with
    ``prompts_per_method`` perturbed copies of its ``target`` surface per method; PDR per prompt and per method
    and the RB-index over the perturbed prompts, with paired intervals over questions. Resumable.

    ``store`` is an open :class:`RunStore` or a run directory (opened, locked and checked here).
    ``load_model(spec)`` builds a translator for S-backtranslation (default: ``load_backend``).
    """
    from robusteval.lifecycle import finish, run_identity, store_for
    from robusteval.perturbations.spec import target_device

    plan = _plan(config)
    identity = run_identity(COMMAND, config, backend_identity(backend), **plan.template.identity(),
                            language=plan.language)
    with store_for(store, identity, prompt_robustness_info(config, batch_size)) as run:
        protect = config.perturbation.protection(plan.examples, plan.template.label_words)
        prompts = perturbed_prompts(run, plan.surfaces, config.target, plan.methods, config.prompts_per_method,
                                    language=plan.language, spec=config.perturbation, protect=protect,
                                    seed=config.seed, load_model=load_model, device=target_device(backend))
        variants = {"clean": plan.surfaces.clean(), **{p.name: p.variant for p in prompts}}
        answers = _classify(config, backend, run, plan, variants, batch_size)
        summary = build_summary(config, backend.name, plan, prompts, answers)
        seeds = {"seed": config.seed, "bootstrap_seed": config.bootstrap_seed}
        return finish(run, summary, seeds=seeds)


def _classify(config: PromptRobustnessConfig, backend: Backend, run: RunStore, plan: _Plan,
              variants: Mapping[str, PromptVariant], batch_size: int) -> dict[str, list[dict[str, Any]]]:
    """Every question asked with every prompt: prompt name -> one answer record per question."""
    soft: bool | None = True if config.label_mode == "soft" else None
    classifiers: dict[str, LabelClassifier] = {}
    for name, variant in variants.items():
        system = variant.system if config.target == "system" else config.system_prompt
        classifiers[name] = LabelClassifier(backend, variant_template(plan.template, variant), run, soft=soft,
                                            chat=config.chat, system_prompt=system)
        soft = classifiers[name].soft  # asked once (an API backend asks its server)
    return ask_every_prompt(run, classifiers, plan.examples, batch_size)


def ask_every_prompt(run: RunStore, classifiers: Mapping[str, LabelClassifier], examples: Sequence[Example],
                     batch_size: int) -> dict[str, list[dict[str, Any]]]:
    """Every example asked with every prompt (one classifier per prompt), each answer a ``classify`` unit:
    prompt name -> one answer record per example."""
    from robusteval.runner import run_units

    names = list(classifiers)
    fields = [example_fields(example) for example in examples]
    items = [(name, i) for name in names for i in range(len(fields))]

    def compute(batch: list[tuple[str, int]]) -> list[dict[str, Any]]:
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for name in dict.fromkeys(name for name, _ in batch):  # one model call per prompt (one shared prefix)
            mine = [i for other, i in batch if other == name]
            out.update(zip(((name, i) for i in mine), classifiers[name].query([fields[i] for i in mine]),
                           strict=True))
        return [out[item] for item in batch]

    records = run_units(run, CLASSIFY_STAGE, items, key_of=lambda item: classifiers[item[0]].key(fields[item[1]]),
                        compute=compute, id_of=lambda item: examples[item[1]].id, batch_size=batch_size,
                        description="classify")
    n = len(fields)
    return {name: records[j * n : (j + 1) * n] for j, name in enumerate(names)}


def build_summary(config: PromptRobustnessConfig, model: str, plan: _Plan, prompts: Sequence[PerturbedPrompt],
                  answers: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Accuracies, PDRs and the RB-index from the stored answers, with the prompts' texts and edits."""
    from robusteval.evals.prompt_robustness.pdr import prompt_robustness_metrics
    from robusteval.seeding import derive_seed

    mode = config.label_mode

    def correct(name: str) -> list[bool]:
        return [predicted_label(record, mode) == example.answer
                for record, example in zip(answers[name], plan.examples, strict=True)]

    by_method: dict[str, list[str]] = {}
    for prompt in prompts:
        by_method.setdefault(prompt.method, []).append(prompt.name)
    outcomes = {name: correct(name) for name in ("clean", *(p.name for p in prompts))}
    metrics = prompt_robustness_metrics(
        outcomes["clean"], {p.name: outcomes[p.name] for p in prompts}, by_method,
        {p.name: p.changed for p in prompts},
        seed=derive_seed(config.bootstrap_seed, "prompt-robustness-bootstrap"), n_resamples=config.bootstrap)
    for prompt in prompts:
        metrics["prompts"][prompt.name].update(
            method=prompt.method, index=prompt.index,
            pieces={piece: block["text"] for piece, block in prompt.pieces.items()},
            edits={piece: block.get("edits") or [] for piece, block in prompt.pieces.items()},
            prefix=prompt.variant.prefix, system=prompt.variant.system)
    clean = plan.surfaces.clean()
    return {
        "model": model,
        "dataset": config.data.dataset,
        "data_file": config.data.data_file,
        "template": plan.template.name,
        "label_mode": mode,
        "target": config.target,
        "methods_spec": config.methods,
        "prompts_per_method": config.prompts_per_method,
        "language": plan.language,
        "unit": UNIT,
        "clean_prompt": {"pieces": plan.pieces, "prefix": clean.prefix, "system": clean.system},
        **metrics,
        # Labels the accuracy counts that could not be read (counted wrong); soft labels are never parsed.
        "n_unparsed": {name: sum(1 for record in records if predicted_label(record, mode) is None)
                       for name, records in answers.items()},
        "skip_reasons": {},
        "exclusions": {},
        KEY: encode([example.id for example in plan.examples], outcomes),
    }
