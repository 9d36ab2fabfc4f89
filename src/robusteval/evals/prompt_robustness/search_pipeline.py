"""``prompt_search``: the adversarial instruction found on a seeded search set under a query budget, then the
clean and the found prompt asked the held-out examples (disjoint from the search set); accuracy, drop and PDR
with paired intervals over the held-out examples.

The search is one unit of stage ``prompt_search`` (keyed by the model, the clean instruction, the search set,
the methods and every search setting), and every answer it asks is a ``classify`` unit, so a rerun reads the
search back and asks the model nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.config import ConfigError, field_check
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import LabelClassifier, predicted_label, template_for
from robusteval.evals.prompt_robustness.config import PromptSearchConfig
from robusteval.evals.prompt_robustness.outcomes import KEY, encode
from robusteval.evals.prompt_robustness.search import (
    SEARCH_STAGE,
    PromptSetClassifier,
    SimilarityDrift,
    split_examples,
)
from robusteval.evals.prompt_robustness.surfaces import PromptSurfaces, variant_template
from robusteval.lifecycle import public_entry
from robusteval.models import Backend
from robusteval.models.base import can_score, scoring_note
from robusteval.models.identity import backend_identity
from robusteval.perturbations.base import Language, detect_language
from robusteval.store import RunStore, unit_key

COMMAND = "prompt-robustness search"
UNIT = "held-out example (the clean and the found prompt ask the same examples: paired)"


def _plan(config: PromptSearchConfig, examples: list[Example] | None = None
          ) -> tuple[list[Example], Any, PromptSurfaces, str, Language]:
    examples = examples if examples is not None else config.data.load()
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples")
    if config.search_size >= len(examples):
        raise ConfigError(config, "search_size", f"{config.search_size} leaves no held-out example of the "
                          f"{len(examples)} examples")
    template = template_for(config.template, config.data.dataset, examples)
    surfaces = PromptSurfaces.of(template)
    with field_check(config, "template"):
        instruction = surfaces.pieces("instruction")["instruction"]
    spec = config.perturbation
    language: Language = (spec.language if spec.language != "auto"  # type: ignore[assignment]
                          else detect_language(instruction))
    with field_check(config, "methods"):
        for method in config.method_names():
            spec.check_method(method, language)
    return examples, template, surfaces, instruction, language


def prompt_search_identity(config: PromptSearchConfig, model: dict[str, Any] | None,
                           examples: Sequence[Example]) -> dict[str, Any]:
    from robusteval.lifecycle import run_identity

    _, template, _, _, language = _plan(config, list(examples))
    return run_identity(COMMAND, config, model, **template.identity(), language=language)


def _preflight(arguments: Mapping[str, Any]) -> None:
    _plan(arguments["config"])


@public_entry(preflight=_preflight)
def prompt_search(config: PromptSearchConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
                  batch_size: int = 8) -> dict[str, Any]:
    """Search the instruction's words for the prompt that lowers ``backend``'s accuracy most on a seeded search
    set within ``config.budget`` queries; report it with the clean prompt on the held-out examples. Resumable."""
    from robusteval.attacks.wordsearch.search import WordImportanceConfig, attack_example
    from robusteval.evals.prompt_robustness.pdr import prompt_robustness_metrics
    from robusteval.evals.prompt_robustness.pipeline import ask_every_prompt
    from robusteval.lifecycle import finish, run_identity, store_for
    from robusteval.models.identity import backend_key
    from robusteval.perturbations import build_perturbation
    from robusteval.perturbations.spec import target_device
    from robusteval.runner import run_units
    from robusteval.seeding import derive_seed

    examples, template, surfaces, instruction, language = _plan(config)
    if config.label_mode == "soft" and not can_score(backend):
        raise ConfigError(config, "label_mode", f"soft needs label log-probs; {backend.name} returns text only"
                          f"{scoring_note(backend)}")
    identity = run_identity(COMMAND, config, backend_identity(backend), **template.identity(), language=language)
    info = {"limit": config.data.limit, "batch_size": batch_size}
    search_ix, held_ix = split_examples(len(examples), config.search_size, config.seed)
    search_set = [examples[i] for i in search_ix]
    held_out = [examples[i] for i in held_ix]
    with store_for(store, identity, info) as run:
        spec = config.perturbation
        options = spec.method_options(device=target_device(backend))
        methods = [build_perturbation(name, language, options) for name in config.method_names()]
        gate = next((getattr(m, "gate") for m in methods if getattr(m, "gate", None) is not None), None)  # noqa: B009
        for method in methods:  # the gate bounds the whole search (below), not each method's own perturb
            if getattr(method, "gate", None) is not None:
                setattr(method, "gate", None)  # noqa: B010 (an attribute of the gated classes only)
        oracle_classifier = PromptSetClassifier(
            backend, template, run, soft=config.label_mode == "soft", chat=config.chat,
            system_prompt=config.system_prompt, surfaces=surfaces, examples=search_set,
            label_mode=config.label_mode)
        per_prompt = len(search_set)
        search = WordImportanceConfig(
            rates=(config.max_rate,), budget=max(1, config.budget // per_prompt), confidence="logprob",
            fields=("text",), language=language, rank=config.rank, seed=config.seed,
            max_drift=None if gate is None else 1.0 - float(gate.minimum))
        protect = spec.protection(examples, template.label_words)
        drift = SimilarityDrift(gate) if gate is not None else None

        def compute(batch: list[str]) -> list[dict[str, Any]]:
            record = attack_example(Example("instruction", instruction, "intact", "label"), oracle_classifier,
                                    methods, search, protect=protect, drift=drift)
            clean = oracle_classifier.asked.get(instruction)
            found_text = record.get("adversarial", {}).get("text", instruction)
            found = oracle_classifier.asked.get(found_text, clean)
            return [{**record, "queries_model": record["queries"] * per_prompt, "budget": config.budget,
                     "search_ids": [ex.id for ex in search_set],
                     "search_acc_clean": _accuracy(clean, search_set, config.label_mode),
                     "search_acc_found": _accuracy(found, search_set, config.label_mode),
                     "found_instruction": found_text} for _ in batch]

        key = unit_key(SEARCH_STAGE, backend_key(backend), instruction, [ex.to_dict() for ex in search_set],
                       config.method_names(), language, config.budget, config.max_rate, config.rank,
                       config.label_mode, config.seed, spec.identity())
        record = run_units(run, SEARCH_STAGE, ["search"], key_of=lambda _: key, compute=compute,
                           description="prompt search")[0]
        found_variant = surfaces.rebuild("instruction", {"instruction": record["found_instruction"]})
        soft = config.label_mode == "soft"
        classifiers = {name: LabelClassifier(backend, variant_template(template, variant), run, soft=soft or None,
                                             chat=config.chat, system_prompt=config.system_prompt)
                       for name, variant in (("clean", surfaces.clean()), ("found", found_variant))}
        answers = ask_every_prompt(run, classifiers, held_out, batch_size)

        def correct(name: str) -> list[bool]:
            return [predicted_label(r, config.label_mode) == ex.answer
                    for r, ex in zip(answers[name], held_out, strict=True)]

        changed = record["found_instruction"] != instruction
        outcomes = {name: correct(name) for name in ("clean", "found")}
        metrics = prompt_robustness_metrics(
            outcomes["clean"], {"found": outcomes["found"]}, {"search": ["found"]}, {"found": changed},
            seed=derive_seed(config.bootstrap_seed, "prompt-search-bootstrap"), n_resamples=config.bootstrap)
        summary = {
            "mode": "search", "model": backend.name, "dataset": config.data.dataset,
            "data_file": config.data.data_file, "template": template.name, "label_mode": config.label_mode,
            "language": language, "methods_spec": config.methods, "unit": UNIT,
            "budget": config.budget, "queries": record["queries_model"],
            "queries_note": "a query = one model call on one example with one candidate prompt (search only; "
                            "the held-out evaluation is not part of the budget)",
            "search_size": len(search_set), "search_ids": record["search_ids"],
            "held_out_ids": [ex.id for ex in held_out],
            "search_acc_clean": record["search_acc_clean"], "search_acc_found": record["search_acc_found"],
            "stop_reason": record.get("stop_reason") or record.get("skip_reason"),
            "clean_instruction": instruction, "found_instruction": record["found_instruction"],
            "edits": (record.get("edits") or {}).get("text", []), "changed": changed,
            "clean_prefix": surfaces.clean().prefix, "found_prefix": found_variant.prefix,
            "similarity": record.get("drift"),
            "held_out": {**metrics, "n_unparsed": {name: sum(1 for r in rs if predicted_label(r, config.label_mode)
                                                             is None) for name, rs in answers.items()}},
            "skip_reasons": {}, "exclusions": {}, KEY: encode([ex.id for ex in held_out], outcomes),
        }
        return finish(run, summary, seeds={"seed": config.seed, "bootstrap_seed": config.bootstrap_seed})


def _accuracy(records: list[dict[str, Any]] | None, examples: list[Example], mode: str) -> float | None:
    if records is None:
        return None
    return sum(predicted_label(r, mode) == ex.answer for r, ex in zip(records, examples, strict=True)) / len(records)
