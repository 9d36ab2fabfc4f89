"""The word-importance pipeline: every example attacked (stage ``wordimportance``, one unit per example), the
per-rate summary, and the adversarial set. Its config is in :mod:`.config` and ``robusteval attack
wordimportance`` is its registration in :mod:`.attack`, both light to import; this module loads on use.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from robusteval.analysis.drift import resolve_measure
from robusteval.attacks.wordimportance.config import (
    COMMAND,
    WordImportanceRunConfig,
)
from robusteval.config import (
    ConfigError,
)
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.lifecycle import public_entry
from robusteval.models.base import Backend, can_score, scoring_note
from robusteval.perturbations.base import Language, Perturbation
from robusteval.perturbations.registry import MethodOptions
from robusteval.store import RunStore
from robusteval.store.stages import register_stage

STAGE = register_stage("wordimportance", summary="hard-label attack per example")
CONFIDENCE_META = "wordimportance_confidence"  # the estimator a run attacks with (resolved from auto)

logger = logging.getLogger("robusteval")


class WordImportanceSummary(TypedDict, total=False):
    attack: str
    model: str
    model_spec: str
    method: str
    methods: list[str]
    dataset: str
    data_file: str | None
    language: str
    confidence: str
    budget: int
    rank: bool
    rates: list[float]
    n: int
    n_attacked: int
    n_skipped: int
    skip_reasons: dict[str, int]  # why examples were not attacked: reason -> count
    exclusions: dict[str, int]
    by_rate: dict[str, dict[str, Any]]
    asr_by_rate: dict[str, float | None]
    notes: list[str]
    adversarial_set: dict[str, Any]
    drift: dict[str, Any]


def wordimportance_identity(config: WordImportanceRunConfig, model: dict[str, Any] | None,
                            examples: Sequence[Example]) -> dict[str, Any]:
    """The run identity; checks the template and every method first (no model, nothing claimed)."""
    from robusteval.evals.classification import template_for
    from robusteval.lifecycle import run_identity

    template = template_for(config.template, config.data.dataset, examples)
    language = config.perturbation.resolve_language(examples)
    for name in config.method_names(language):
        config.perturbation.check_method(name, language)
    # What --max-drift bounds depends on whether the embedding model is installed: part of the identity.
    measure = {"drift_measure": resolve_measure()} if config.max_drift is not None else {}
    return run_identity(COMMAND, config, model, **template.identity(), language=language, **measure)


def with_target_embeddings(options: MethodOptions, method: str, backend: Backend) -> MethodOptions:
    """Embedding neighbours default to the target's own embedding matrix when the target is a local hf model."""
    from robusteval.models.identity import backend_identity

    if options.embedding_model or options.vectors or method not in ("W-wordembedding", "combined"):
        return options
    identity = backend_identity(backend)
    if identity.get("backend") != "hf" or not identity.get("source"):
        return options
    return dataclasses.replace(options, embedding_model=str(identity["source"]))


def build_methods(config: WordImportanceRunConfig, language: Language, options: MethodOptions
                  ) -> tuple[list[Perturbation], list[str]]:
    """The methods to attack with, and notes naming the ``combined`` methods left out for a missing resource."""
    from robusteval.perturbations.registry import build_perturbation

    if config.method != "combined":
        return [build_perturbation(config.method, language, options)], []
    methods: list[Perturbation] = []
    notes: list[str] = []
    for name in config.method_names(language):
        if name == "W-maskedlm" and not options.mlm_model:
            notes.append("combined: leaving out W-maskedlm (give --mlm-model to include it)")
            continue
        if name == "W-wordembedding" and language == "zh" and not (options.embedding_model or options.vectors):
            notes.append("combined: leaving out W-wordembedding (give --embedding-model or --vectors to include it)")
            continue
        methods.append(build_perturbation(name, language, options))
    return methods, notes


def _preflight(arguments: Mapping[str, Any]) -> None:
    config: WordImportanceRunConfig = arguments["config"]
    examples = arguments.get("examples")
    wordimportance_identity(config, None, list(examples) if examples is not None else config.data.load())


@public_entry(preflight=_preflight)
def attack_wordimportance(
    config: WordImportanceRunConfig,
    backend: Backend,
    store: RunStore | str | os.PathLike[str],
    *,
    load_model: Callable[[str], Backend] | None = None,
    batch_size: int = 8,
    examples: Sequence[Example] | None = None,
) -> WordImportanceSummary:
    """Attack every example of ``config.data`` on ``backend`` used as a classifier; returns the summary (also
    written to summary.json) and writes the adversarial set when ``config.write_adv`` is set.

    ``store`` is an open :class:`RunStore` or a run directory (opened, locked and checked here).
    ``load_model(spec)`` builds a translator for back-translation (default: ``load_backend``). Each example is
    one stored unit and its candidates go to the backend together, so ``batch_size`` (kept for the
    :class:`~robusteval.attacks.base.Attack` protocol) changes nothing. ``examples`` overrides the data.
    """
    from robusteval.analysis.drift import DriftMeter, drift_summary
    from robusteval.attacks.wordsearch.oracle import default_confidence
    from robusteval.attacks.wordsearch.search import WordImportanceConfig, attack_example
    from robusteval.evals.classification import LabelClassifier, template_for
    from robusteval.lifecycle import finish, store_for
    from robusteval.metrics.wordimportance import attack_summary
    from robusteval.models.identity import backend_identity, backend_key
    from robusteval.perturbations.spec import target_device
    from robusteval.runner import run_units
    from robusteval.store import unit_key

    examples = list(examples) if examples is not None else config.data.load()
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples to attack")
    identity = wordimportance_identity(config, backend_identity(backend), examples)
    language: Language = identity["language"]
    template = template_for(config.template, config.data.dataset, examples)
    spec = config.perturbation
    with store_for(store, identity, {"limit": config.data.limit, "batch_size": batch_size}) as run:
        if config.confidence == "logprob" and not can_score(backend):
            raise ConfigError(config, "confidence", f"logprob needs label log-probs; {backend.name} returns text "
                              f"only{scoring_note(backend)} (use {{confidence=sample}})")
        classifier = LabelClassifier(backend, template, run, soft=True if config.confidence == "logprob" else None,
                                     chat=config.chat, system_prompt=config.system_prompt,
                                     thinking_budget=config.thinking.max_thinking_tokens)
        confidence = default_confidence(classifier) if config.confidence == "auto" else config.confidence
        check_confidence(run, confidence, backend)
        search = WordImportanceConfig(
            rates=config.rates, budget=config.budget, confidence=confidence,  # type: ignore[arg-type]
            n_samples=config.n_samples, temperature=config.generation.sampling_temperature(), fields=tuple(spec.text_fields(examples)),
            language=language, rank=config.rank, seed=config.seed, max_drift=config.max_drift,
        )
        options = with_target_embeddings(spec.method_options(load_model, device=target_device(backend)),
                                         config.method, backend)
        methods, notes = build_methods(config, language, options)
        for note in notes:
            logger.info(note)
        protect = spec.protection(examples, template.label_words)
        model_key = backend_key(backend)
        # Beside the target model; the measure is the one the identity recorded when --max-drift is set.
        meter = DriftMeter(identity.get("drift_measure", "auto"), device=target_device(backend))

        def compute(batch: list[Example]) -> list[dict[str, Any]]:
            return [attack_example(ex, classifier, methods, search, protect=protect, drift=meter) for ex in batch]

        records = run_units(run, STAGE, examples, key_of=lambda ex: unit_key(STAGE, model_key, ex.to_dict()),
                            compute=compute, id_of=lambda ex: ex.id, description=f"attack {config.method}")
        summary: dict[str, Any] = {
            "attack": "wordimportance",
            "model": backend.name,
            "model_spec": backend.name,  # the spec it was loaded from (hf:PATH, openai:MODEL@URL)
            "method": config.method,
            "methods": [m.name for m in methods],
            "dataset": config.data.dataset,
            "data_file": config.data.data_file,
            "language": language,
            "confidence": confidence,
            "budget": config.budget,
            "rank": config.rank,
            "rates": list(config.rates),
            **attack_summary(records, config.rates),
            # Drift of the adversarial examples (the successful ones, as written by --write-adv).
            "drift": {**drift_summary([r for r in records if r["status"] == "success"], config.max_drift),
                      "n_drift_rejected": sum(r.get("n_drift_rejected", 0) for r in records)},
        }
        if config.write_adv:
            n_written = write_adversarial_set(config.write_adv, examples, records, config.method)
            summary["adversarial_set"] = {"path": config.write_adv, "n": n_written}
            notes.append(f"adversarial set: {n_written} successful examples -> {config.write_adv}")
        if notes:
            summary["notes"] = notes
        return finish(run, summary, seeds={"seed": config.seed}, shape=WordImportanceSummary)


def check_confidence(run: RunStore, confidence: str, backend: Backend) -> None:
    """Record the estimator a run attacks with; refuse to resume it with another one.

    ``--confidence auto`` resolves by what the backend offers, and an API server may gain or lose prompt log-probs
    between invocations; the stored attacks are not keyed by the estimator, so mixing would go unnoticed."""
    stored = run.get_meta(CONFIDENCE_META)
    if stored is None:
        run.set_meta(CONFIDENCE_META, confidence)
    elif stored != confidence:
        raise UserError(f"{run.run_dir}: this run attacked with confidence {stored}, but {backend.name} now gives "
                        f"{confidence}{scoring_note(backend)}; resume it with confidence {stored}, or use another "
                        "run directory")


def write_adversarial_set(path: str | os.PathLike[str], examples: Sequence[Example],
                          records: Sequence[dict[str, Any]], method: str) -> int:
    """Successful adversarial examples in robusteval's example format (the "Adv" set for ``robustness``);
    returns how many were written."""
    from robusteval.evals.classification import with_fields
    from robusteval.store import write_jsonl_atomic

    out = []
    for example, record in zip(examples, records, strict=True):
        if record["status"] != "success":
            continue
        row = with_fields(example, record["adversarial"]).to_dict()
        row["perturbation"] = {"method": f"wordimportance:{method}", "changed": True, "queries": record["queries"],
                               "fields": {name: {"original": record["original"][name], "edits": edits}
                                          for name, edits in record["edits"].items()},
                               "drift": record.get("drift")}
        out.append(row)
    write_jsonl_atomic(path, out)
    return len(out)


def attack_records(store: RunStore) -> list[dict[str, Any]]:
    """The stored per-example records of a word-importance run (what the summary and reports read)."""
    return store.records(STAGE)
