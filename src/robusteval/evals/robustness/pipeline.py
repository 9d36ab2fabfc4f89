"""Accuracy on a dataset and on perturbed copies of it, and the RB-index: the ``robustness`` pipeline.

Perturbed sets are method names (generated here, seeded, one stored unit per example: stage
``perturbed_example``) or files written by ``robusteval perturb`` or the word-importance attack (examples
missing from a file count as unchanged). Every distinct text is classified once (stage ``classify``): an
unchanged example in a set reuses the original's answer, and a resumed run asks nothing twice. Stage
``robustness_outcome`` holds one row per (set, example) for readers (the HTML report): both texts with the
set's edits, the gold label and the labels read on the original and on the perturbed text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    example_fields,
    predicted_label,
    template_for,
)
from robusteval.evals.robustness.config import RobustnessConfig, SetSpec
from robusteval.lifecycle import public_entry
from robusteval.models import Backend
from robusteval.models.identity import backend_identity
from robusteval.perturbations.base import Language
from robusteval.perturbations.spec import target_device
from robusteval.store import RunStore
from robusteval.store.stages import register_stage
from robusteval.text.thinking import truncation_summary

COMMAND = "robustness"
CLASSIFY_STAGE = "classify"
OUTCOME_STAGE = register_stage("robustness_outcome", summary="per-example outcomes on each perturbed set")




class RobustnessSummary(TypedDict, total=False):
    model: str
    dataset: str
    data_file: str | None
    template: str
    label_mode: str
    sets_spec: str
    n: int
    acc_original: float | None
    acc_original_ci95: list[float] | None
    acc: dict[str, float | None]
    sets: dict[str, dict[str, Any]]
    T: int
    sets_in_index: list[str]
    sets_excluded: list[str]
    min_changed: int
    rb_index: float | None
    rb_index_ci95: list[float] | None
    rb_index_ci95_method: str | None
    n_unparsed: dict[str, int]
    skip_reasons: dict[str, int]
    exclusions: dict[str, int]
    soft: dict[str, Any]
    preservation_labels: dict[str, Any]
    preserved_only: dict[str, Any]


@dataclass(frozen=True)
class _Plan:
    """What a run reads, loaded and checked before any model loads."""

    examples: list[Example]
    specs: list[SetSpec]
    template: ClassificationTemplate
    file_sets: dict[str, list[Example]]
    language: Language


def _plan(config: RobustnessConfig, examples: Sequence[Example] | None = None) -> _Plan:
    from robusteval.data.loaders import load_dataset

    examples = list(examples) if examples is not None else config.data.load()
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples")
    specs = config.set_specs()
    template = template_for(config.template, config.data.dataset, examples)
    file_sets = {spec.name: load_dataset("examples", spec.path) for spec in specs if spec.path is not None}
    language = config.perturbation.resolve_language(examples)
    for spec in specs:  # unknown method names fail here, before a model loads or a run directory is claimed
        if spec.method is not None:
            config.perturbation.check_method(spec.method, language)
    return _Plan(examples, specs, template, file_sets, language)


def robustness_identity(config: RobustnessConfig, model: dict[str, Any] | None, examples: Sequence[Example]
                        ) -> dict[str, Any]:
    """The run identity; reads and checks the set files, template and methods (cheap, no model)."""
    from robusteval.lifecycle import run_identity

    plan = _plan(config, examples)
    return run_identity(COMMAND, config, model, **plan.template.identity(), language=plan.language)


def robustness_info(config: RobustnessConfig, batch_size: int) -> dict[str, Any]:
    """What the run records beside its identity: the sets (with the files' hashes), label mode, limit."""
    from robusteval.store import file_sha256

    specs = config.set_specs()
    return {"limit": config.data.limit, "sets": config.sets, "label_mode": config.label_mode,
            "batch_size": batch_size,
            "set_files": {s.name: {"path": s.path, "sha256": file_sha256(s.path)} for s in specs if s.path}}


def perturbed_sets(config: RobustnessConfig, plan: _Plan, store: RunStore, *,
                   load_model: Callable[[str], Backend] | None = None, device: str = "auto"
                   ) -> dict[str, list[Example]]:
    """Each set's version of every example, in the original order; generated sets are stored as units."""
    from robusteval.perturbations import build_perturbation
    from robusteval.perturbations.dataset import example_from_record, perturb_examples_stored

    spec = config.perturbation
    examples = plan.examples
    fields = spec.text_fields(examples)
    protect = spec.protection(examples, plan.template.label_words)
    out: dict[str, list[Example]] = {}
    options = None
    for set_spec in plan.specs:
        if set_spec.name in plan.file_sets:
            by_id = {ex.id: ex for ex in plan.file_sets[set_spec.name]}
            out[set_spec.name] = [by_id.get(ex.id, ex) for ex in examples]
            continue
        options = options or spec.method_options(load_model, device=device)
        perturbation = build_perturbation(set_spec.method or set_spec.name, plan.language, options)
        records = perturb_examples_stored(store, examples, perturbation, fields=fields, seed=config.seed,
                                          budget=spec.budget(perturbation), protect=protect)
        out[set_spec.name] = [example_from_record(r) for r in records]
    return out


def set_similarity(config: RobustnessConfig, plan: _Plan, sets: dict[str, list[Example]]
                   ) -> dict[str, dict[str, Any]]:
    """Per generated set whose method applies ``min_similarity``: what the gate did (see
    :func:`~robusteval.perturbations.similarity.summarise_similarity`); empty without the option."""
    from robusteval.perturbations.registry import similarity_applies
    from robusteval.perturbations.similarity import measure_label, summarise_similarity

    minimum = config.perturbation.min_similarity
    if minimum is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for spec in plan.specs:
        if spec.method is not None and similarity_applies(spec.method):
            blocks = [block for ex in sets[spec.name]
                      for block in ((ex.meta.get("perturbation") or {}).get("fields") or {}).values()]
            out[spec.name] = summarise_similarity(blocks, minimum=minimum, measure=measure_label(plan.language))
    return out


def _preflight(arguments: Mapping[str, Any]) -> None:
    _plan(arguments["config"])  # data, set files, template labels, each method for the data's language


@public_entry(preflight=_preflight)
def robustness(config: RobustnessConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
               load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> RobustnessSummary:
    """Accuracy of ``backend`` (as a classifier) on ``config.data`` and on each perturbed set, and the
    RB-index with paired-bootstrap CIs; every answer is a stored, resumable unit.

    ``store`` is an open :class:`RunStore` or a run directory (opened, locked and checked here).
    ``load_model(spec)`` builds a translator for back-translated sets (default: ``load_backend``).
    """
    from robusteval.lifecycle import finish, run_identity, store_for
    from robusteval.perturbations.measured import notice_lines
    from robusteval.perturbations.similarity import similarity_line
    from robusteval.progress import logger
    from robusteval.runner import run_units

    plan = _plan(config)
    identity = run_identity(COMMAND, config, backend_identity(backend), **plan.template.identity(),
                            language=plan.language)
    with store_for(store, identity, robustness_info(config, batch_size)) as run:
        classifier = LabelClassifier(backend, plan.template, run, soft=True if config.label_mode == "soft" else None,
                                     chat=config.chat, system_prompt=config.system_prompt,
                                     thinking_budget=config.thinking.max_thinking_tokens)
        device = target_device(backend)
        sets = perturbed_sets(config, plan, run, load_model=load_model, device=device)
        # Classify every distinct text once: unchanged examples in a set reuse the original's answer.
        versions = list(plan.examples) + [ex for exs in sets.values() for ex in exs]
        records = run_units(
            run, CLASSIFY_STAGE, versions,
            key_of=lambda ex: classifier.key(example_fields(ex)),
            compute=lambda batch: classifier.query([example_fields(ex) for ex in batch]),
            id_of=lambda ex: ex.id, batch_size=batch_size, description="classify",
        )
        n = len(plan.examples)
        by_set: dict[str, list[dict[str, Any]]] = {"original": records[:n]}
        for i, name in enumerate(sets):
            by_set[name] = records[n * (i + 1) : n * (i + 2)]
        store_outcomes(run, plan.examples, sets, by_set, config.label_mode)
        summary = build_summary(config, backend.name, plan, sets, by_set, soft=bool(classifier.soft),
                                drift=set_drift(config, plan, sets, device=device),
                                similarity=set_similarity(config, plan, sets))
        summary = with_preservation(config, run, summary)
        for name, block in summary["sets"].items():  # into run.log (the CLI prints them under its table)
            if "similarity" in block:
                logger.info("%s: %s", name, similarity_line(block["similarity"]))
        for line in notice_lines(block["measured_preservation"] for block in summary["sets"].values()
                                 if "measured_preservation" in block):
            logger.info("%s", line)
        seeds = {"seed": config.seed, "bootstrap_seed": config.bootstrap_seed}
        return finish(run, summary, seeds=seeds, shape=RobustnessSummary)


def with_preservation(config: RobustnessConfig, store: RunStore, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with each set's measured preservation (:mod:`robusteval.evals.robustness.preservation`) from
    ``config.labels`` or, when not given, from the store the run's summary named before (if it is still there:
    re-running a run keeps its labels); unchanged without either."""
    from robusteval.evals.robustness.preservation import LABELS_KEY, PRESERVED_KEY, attach_preservation
    from robusteval.seeding import derive_seed

    before = store.get_meta("summary") or {}
    labels = config.labels or (before.get(LABELS_KEY) or {}).get("path")
    if not labels or not os.path.isfile(labels):
        return summary
    preserved = config.preserved_only or (not config.labels and PRESERVED_KEY in before)
    return attach_preservation(summary, store.records(OUTCOME_STAGE), labels, preserved_only=preserved,
                               seed=derive_seed(config.bootstrap_seed, "robustness-bootstrap"),
                               n_resamples=config.bootstrap)


def store_outcomes(store: RunStore, examples: Sequence[Example], sets: dict[str, list[Example]],
                   by_set: dict[str, list[dict[str, Any]]], mode: str) -> None:
    """One ``robustness_outcome`` row per (set, example): each text field before and after (with the set's
    edits where the perturbation recorded them), the gold label and both predicted labels. Cheap and derived:
    identical rows are not rewritten, so a finished run re-run writes nothing."""
    from robusteval.store import unit_key

    originals = [example_fields(example) for example in examples]  # once per example, not once per set
    labels_before = [predicted_label(row, mode) for row in by_set["original"]]
    for name, versions in sets.items():
        for example, original, label_before, before, version, after in zip(
                examples, originals, labels_before, by_set["original"], versions, by_set[name], strict=True):
            perturbed = example_fields(version)
            recorded = ((version.meta.get("perturbation") or {}).get("fields") or {})
            fields = {key: {"original": original.get(key, ""), "perturbed": value,
                            "edits": (recorded.get(key) or {}).get("edits") or [],
                            "method": (recorded.get(key) or {}).get("method")}
                      for key, value in perturbed.items() if key != "premise"}
            label_after = predicted_label(after, mode)
            row = {"id": example.id, "set": name, "gold": example.answer, "fields": fields,
                   "changed": original != perturbed, "label_original": label_before, "label": label_after,
                   "correct_original": label_before == example.answer, "correct": label_after == example.answer,
                   **_thinking(before, "_original"), **_thinking(after, "")}
            store.put(OUTCOME_STAGE, unit_key(OUTCOME_STAGE, name, example.id), row, example_id=example.id)


def _thinking(record: dict[str, Any], suffix: str) -> dict[str, Any]:
    """A thinking classifier's trace and reply for an outcome row (``thinking``, ``reply``, ``thinking_truncated``,
    each with ``suffix``); nothing for a model without thinking (its rows stay as they were)."""
    if "thinking" not in record:
        return {}
    return {f"{key}{suffix}": record.get(key) for key in ("thinking", "reply", "thinking_truncated")}


def set_drift(config: RobustnessConfig, plan: _Plan, sets: dict[str, list[Example]], *, device: Any = "auto"
              ) -> dict[str, dict[str, Any]]:
    """Per set, the drift of every example from its original (unchanged ones count, at zero: the set as the
    model read it), summarised. One text per example: the perturbed fields joined, that is the configured text
    fields plus any other field the set changed (a file may perturb more)."""
    from robusteval.analysis.drift import DriftMeter, join_fields

    meter = DriftMeter(device=device)
    base = config.perturbation.text_fields(plan.examples)
    originals = [example_fields(ex) for ex in plan.examples]
    out: dict[str, dict[str, Any]] = {}
    for name, exs in sets.items():
        versions = [example_fields(ex) for ex in exs]
        changed = {key for orig, new in zip(originals, versions, strict=True) for key in new
                   if key != "premise" and new[key] != orig.get(key)}
        names = [*base, *changed]  # join_fields puts them in one order, the question as "text"
        records = meter.measure([join_fields(f, names) for f in originals], [join_fields(f, names) for f in versions])
        out[name] = meter.summarise(records)
    return out


def file_method(examples: Sequence[Example]) -> str | None:
    """The one perturbation method a perturbed file's changed examples name (``robusteval perturb`` records it
    in each line), or None: no changed example, no method recorded, or several."""
    methods = {((ex.meta or {}).get("perturbation") or {}).get("method") for ex in examples
               if ((ex.meta or {}).get("perturbation") or {}).get("changed")}
    return methods.pop() if len(methods) == 1 and None not in methods else None


def build_summary(config: RobustnessConfig, model: str, plan: _Plan, sets: dict[str, list[Example]],
                  by_set: dict[str, list[dict[str, Any]]], *, soft: bool,
                  drift: dict[str, dict[str, Any]] | None = None,
                  similarity: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Accuracies, drops and RB-index from the stored answers (``by_set``: "original" and each set);
    ``drift`` (:func:`set_drift`) and ``similarity`` (:func:`set_similarity`) go into each set's entry."""
    from robusteval.metrics.robustness import robustness_summary
    from robusteval.perturbations.measured import measured_preservation
    from robusteval.seeding import derive_seed

    examples = plan.examples
    # The bootstrap draws from its own seed, so changing --seed (the sets) does not move the CIs' noise.
    boot = derive_seed(config.bootstrap_seed, "robustness-bootstrap")

    def correct(name: str, mode: str) -> list[bool]:
        return [predicted_label(r, mode) == ex.answer for r, ex in zip(by_set[name], examples, strict=True)]

    mode = config.label_mode
    originals = [example_fields(ex) for ex in examples]
    changed = {name: [example_fields(ex) != orig for ex, orig in zip(exs, originals, strict=True)]
               for name, exs in sets.items()}
    summary = robustness_summary(correct("original", mode), {name: correct(name, mode) for name in sets},
                                 changed_by_set=changed, min_changed=config.min_changed,
                                 changed_only=config.changed_only, seed=boot, n_resamples=config.bootstrap)
    for name in sets:
        if drift is not None and name in drift:
            summary["sets"][name]["drift"] = drift[name]
        if similarity and name in similarity:
            summary["sets"][name]["similarity"] = similarity[name]
    for spec in plan.specs:  # each set's method: its measured share of reviewed edits not the same meaning
        method = spec.method or file_method(plan.file_sets.get(spec.name, []))
        if method is not None and spec.name in summary["sets"]:
            summary["sets"][spec.name]["measured_preservation"] = measured_preservation(
                method, plan.language, config.perturbation if spec.method else None, from_file=not spec.method)
    # The labels the accuracy counts that could not be read (counted wrong): soft labels are scored, never parsed,
    # so a soft run has none, whatever its generations held.
    summary["n_unparsed"] = {name: sum(1 for r in recs if predicted_label(r, mode) is None)
                             for name, recs in by_set.items()}
    # A thinking classifier: per set, the traces never closed (no label: wrong, and counted in n_unparsed too).
    truncated = {name: block["thinking_truncated"] for name, recs in by_set.items()
                 if (block := truncation_summary(recs))}
    if truncated:
        summary["thinking_truncated"] = truncated
    # Every example is classified on every set: none is left out (a label that cannot be read counts as wrong and
    # is counted in n_unparsed); the fields are here so every method's summary says what it left out, and why.
    summary["skip_reasons"] = {}
    summary["exclusions"] = {}
    if soft and mode == "hard":  # the other view, for reference
        other = robustness_summary(correct("original", "soft"), {name: correct(name, "soft") for name in sets},
                                   changed_by_set=changed, min_changed=config.min_changed,
                                   seed=boot, n_resamples=config.bootstrap)
        summary["soft"] = {k: other[k] for k in ("acc_original", "acc", "T", "rb_index", "rb_index_ci95",
                                                 "rb_index_ci95_method")}
    return {
        "model": model,
        "dataset": config.data.dataset,
        "data_file": config.data.data_file,
        "template": plan.template.name,
        "label_mode": mode,
        "sets_spec": config.sets,
        **summary,
    }
