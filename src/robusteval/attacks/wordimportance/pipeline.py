"""The word-importance pipeline: every example attacked (stage ``wordimportance``, one unit per example), the
per-rate summary, and the adversarial set; ``robusteval attack wordimportance`` is its registration below.

Light to import (the CLI reads the registration): the target and perturbation models load on use.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from robusteval.analysis.drift import resolve_measure
from robusteval.attacks.base import register_attack
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
from robusteval.data.example import Example
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.evals.classification import check_template_source
from robusteval.lifecycle import public_entry
from robusteval.models.base import Backend, can_score, scoring_note
from robusteval.perturbations.base import Language, Perturbation
from robusteval.perturbations.registry import MethodOptions, check_method_name
from robusteval.perturbations.spec import CandidateSpec
from robusteval.seeding import DEFAULT_SEED
from robusteval.store import RunStore
from robusteval.store.stages import register_stage

STAGE = register_stage("wordimportance", summary="hard-label attack per example")
CONFIDENCE_META = "wordimportance_confidence"  # the estimator a run attacks with (resolved from auto)
COMMAND = "attack wordimportance"
#: The patent's nine Chinese methods, in its order: what ``combined`` runs for Chinese text.
NINE_METHODS = ("C-traditional", "C-pinyin", "C-radical", "C-morphonym", "C-shuffle", "W-homophone", "W-synonym",
                "W-wordembedding", "W-maskedlm")
ENGLISH_METHODS = ("C-keyboard", "C-ocr", "C-swap", "C-shuffle", "W-synonym", "W-wordembedding", "W-maskedlm")
DEFAULT_RATES = (0.05, 0.1, 0.2, 0.3)

logger = logging.getLogger("robusteval")


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
class WordImportanceRunConfig:
    """One word-importance attack run: data, the perturbation method(s) and their resources, the rates α,
    the query budget and the confidence estimator."""

    data: DataSpec = nested()
    #: Which language, fields and words, and the models methods read; default: each method's own settings.
    perturbation: CandidateSpec = nested(default_factory=CandidateSpec)
    method: str = option(metavar="METHOD|combined", help="the perturbation method")
    #: Also accepted as ``"0.05,0.1"`` (how the flag gives it); a sorted tuple of distinct floats once built.
    rates: tuple[float, ...] = option(DEFAULT_RATES, metavar="A1,A2",
                                      help="perturbation rates alpha: the largest share of words that may change")
    budget: int = option(500, help="query budget per example (ranking included)")
    confidence: str = option("auto", choices=("auto", "logprob", "sample", "greedy"),
                             help="confidence estimator: auto = logprob when the backend scores, else sample")
    n_samples: int = option(5, help="sample: answers sampled per text")
    temperature: float = option(0.7, help="sample: sampling temperature")
    rank: bool = option(True, negate="--no-rank",
                        help="baseline: perturb words in text order without the ranking stage")
    template: str | None = option(None, metavar="nli-zh|yesno|text|PATH",
                                  help="classification prompt template (default: nli-zh for OCNLI, yesno for yes/no labels, else text)")
    chat: bool = option(False, help="prompt through the model's chat template (hf) or /chat/completions (openai): "
                        "the template's text as one user turn")
    system_prompt: str | None = option(None, help="--chat: a system turn before it (default: none)")
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
        with field_check(self, "method"):
            check_method_name(self.method, extra=("combined",))
        check_choices(self)
        check_at_least(self, "budget", 1, optional=False)
        if self.confidence == "sample":
            check_at_least(self, "n_samples", 1, optional=False)
        check_at_least(self, "max_drift", 0)
        check_chat(self)
        with field_check(self, "template"):
            check_template_source(self.template)

    def method_names(self, language: Language) -> tuple[str, ...]:
        """The method, or every method of the language for ``combined``."""
        if self.method != "combined":
            return (self.method,)
        return NINE_METHODS if language == "zh" else ENGLISH_METHODS


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
    from robusteval.attacks.wordimportance.oracle import default_confidence
    from robusteval.attacks.wordimportance.search import WordImportanceConfig, attack_example
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
                                     chat=config.chat, system_prompt=config.system_prompt)
        confidence = default_confidence(classifier) if config.confidence == "auto" else config.confidence
        check_confidence(run, confidence, backend)
        search = WordImportanceConfig(
            rates=config.rates, budget=config.budget, confidence=confidence,  # type: ignore[arg-type]
            n_samples=config.n_samples, temperature=config.temperature, fields=tuple(spec.text_fields(examples)),
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


# ------------------------------------------------------------------------------------------------ registration
@register_attack("wordimportance", summary="black-box hard-label attack: rank words, then perturb them in order")
class WordImportanceAttack:
    """Word-importance attack on a model used as a classifier (it only has to return a label). Ranking:
    importance of a word = drop of the confidence in the true label when it is deleted (label log-probs when
    the backend can score, else the share of sampled answers naming the true label). Perturbation: in that
    order, keep the candidate that lowers the confidence most; success when the greedy label flips; stop
    before the perturbed-word rate exceeds alpha or when the query budget is spent. --method is one
    perturbation method, or 'combined': for Chinese the patent's nine (C-traditional, C-pinyin, C-radical,
    C-morphonym, C-shuffle, W-homophone, W-synonym, W-wordembedding, W-maskedlm), for English C-keyboard,
    C-ocr, C-swap, C-shuffle, W-synonym, W-wordembedding, W-maskedlm. Reports attack success rate, accuracy
    under attack, perturbed-word % and queries per rate."""

    config_type = WordImportanceRunConfig
    data_kind = "label"
    example = ("robusteval attack wordimportance --model hf:./tiny-nli --dataset ocnli \\\n"
               "    --data-file ocnli/dev.json --method C-homophone --rates 0.05,0.1,0.2,0.3 \\\n"
               "    --budget 300 --limit 50 --out runs/wi-homophone --write-adv runs/adv-homophone.jsonl")

    def identity(self, config: WordImportanceRunConfig, model: dict[str, Any] | None,
                 examples: Sequence[Example]) -> dict[str, Any]:
        return wordimportance_identity(config, model, examples)

    def run(self, config: WordImportanceRunConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
            load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> WordImportanceSummary:
        return attack_wordimportance(config, backend, store, load_model=load_model, batch_size=batch_size)

    def summarise(self, store: RunStore) -> dict[str, Any]:
        stored = store.get_meta("summary")
        if stored is not None:
            return dict(stored)
        from robusteval.metrics.wordimportance import attack_summary

        rates = store.identity.get("rates") or DEFAULT_RATES
        return attack_summary(attack_records(store), rates)

    def table(self, summary: Any) -> tuple[str, list[dict[str, Any]], list[str]]:
        from robusteval.metrics.formatting import format_rate
        from robusteval.metrics.stats import wilson_interval

        title = f"word-importance attack: {summary['method']} on {summary['model']} (n={summary['n']})"
        n = summary["n"]
        rows = []
        for rate, values in summary["by_rate"].items():
            wins, failed = values["n_success"], values["n_failed"]
            # Each rate with its Wilson interval: accuracies over all n examples, the success rate over the
            # attacked ones (successes + failures).
            intervals = {"original_accuracy": wilson_interval(wins + failed, n),
                         "accuracy_under_attack": wilson_interval(failed, n),
                         "attack_success_rate": wilson_interval(wins, wins + failed)}
            rows.append({"rate": rate, **values, **{name: format_rate(values[name], ci)
                                                     for name, ci in intervals.items()}})
        return title, rows, ["rate", "n_success", "n_failed", "n_skipped", "original_accuracy",
                             "accuracy_under_attack", "attack_success_rate", "avg_perturbed_word_pct",
                             "avg_words_per_input", "avg_queries"]
