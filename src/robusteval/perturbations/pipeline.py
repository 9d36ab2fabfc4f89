"""The ``perturb`` pipeline: a perturbed copy of a dataset written to one JSON Lines file.

Progress goes to a work directory beside the output (``FILE.jsonl.parts``, a run store opened through
:func:`robusteval.lifecycle.open_run`, one unit per example), so a killed run resumes; the output is written
atomically at the end and the work directory removed. Every line carries a fingerprint of the settings, so a
re-run with the same settings sees a complete file and returns at once.

Every line's ``perturbation`` block carries the example's ``drift`` from its original
(:mod:`robusteval.analysis.drift`): the edit measures always, the sentence-embedding cosine with
``--drift-embedding`` (opt-in here: it loads torch and the embedding model, which dictionary methods never need).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from robusteval.analysis.drift import summarise_drift
from robusteval.data.example import Example
from robusteval.perturbations.measured import measured_preservation
from robusteval.perturbations.perturb_config import PerturbConfig
from robusteval.perturbations.similarity import measure_label, summarise_similarity
from robusteval.perturbations.spec import ModelLoader

COMMAND = "perturb"


class PerturbSummary(TypedDict):
    method: str
    language: str
    out: str
    n: int
    n_changed: int
    n_edits: int
    already_complete: bool  # the output was complete for these settings and was kept as it was
    drift: dict[str, Any]  # the lines' drift from their originals, summarised
    similarity: NotRequired[dict[str, Any]]  # with min_similarity: what the gate did (texts kept / fell back, with n)
    measured_preservation: dict[str, Any]  # the method's measured share of reviewed edits not the same (measured.py)


def perturb_identity(config: PerturbConfig, examples: Sequence[Example]) -> dict[str, Any]:
    """The settings that change the output; also checks the method (before anything is claimed)."""
    from robusteval.lifecycle import run_identity

    language = config.perturbation.resolve_language(examples)
    config.perturbation.check_method(config.method, language)
    # A gated run names its measure: one made with the chrF fallback never resumes as an embedding-gated one.
    measure = {} if config.perturbation.min_similarity is None else {"similarity_measure": measure_label(language)}
    return run_identity(COMMAND, config, None, language=language, **measure)


def finished_output(path: Path, settings: str, examples: Sequence[Example]) -> list[dict[str, Any]] | None:
    """The records of ``path`` when it is a complete copy written with the same settings, else None."""
    if not path.is_file() or Path(f"{path}.parts").exists():
        return None
    try:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    same = len(records) == len(examples) and all(
        isinstance(r, dict) and r.get("id") == ex.id and (r.get("perturbation") or {}).get("settings") == settings
        for r, ex in zip(records, examples, strict=False)
    )
    return records if same else None


def perturb_dataset(config: PerturbConfig, out_path: str | os.PathLike[str], *,
                    load_model: ModelLoader | None = None, device: str = "auto") -> PerturbSummary:
    """Write the perturbed copy of ``config.data`` to ``out_path`` (resumable; kept as is when already
    complete for these settings). ``load_model(spec)`` builds the translator of a sentence-level method;
    ``device`` is where methods put the models they load themselves (masked LM, re-ranker)."""
    from robusteval.lifecycle import open_run
    from robusteval.perturbations.dataset import perturb_examples_stored
    from robusteval.perturbations.registry import build_perturbation
    from robusteval.store import unit_key, write_jsonl_atomic

    spec = config.perturbation
    examples = config.data.load()
    identity = perturb_identity(config, examples)
    language = identity["language"]
    out = Path(out_path)
    settings = unit_key(identity, [ex.id for ex in examples])
    records = finished_output(out, settings, examples)
    complete = records is not None
    if records is None:
        work_dir = Path(f"{out}.parts")
        with open_run(work_dir, identity, info={"limit": config.data.limit},
                      load=lambda: build_perturbation(config.method, language,
                                                      spec.method_options(load_model, device=device))
                      ) as (store, perturbation):
            assert perturbation is not None  # narrowing for type checkers: load() was given
            records = perturb_examples_stored(
                store, examples, perturbation, fields=spec.text_fields(examples), seed=config.seed,
                budget=spec.budget(perturbation), protect=spec.protection(examples),
            )
        drifts = line_drift(records, embedding=config.drift_embedding, device=device)
        # The settings' fingerprint in every line lets a re-run see that the file is complete.
        records = [{**r, "perturbation": {**r["perturbation"], "drift": d, "settings": settings}}
                   for r, d in zip(records, drifts, strict=True)]
        write_jsonl_atomic(out, records)
        shutil.rmtree(work_dir)
    summary: PerturbSummary = {
        "method": config.method,
        "language": language,
        "out": str(out_path),
        "n": len(records),
        "n_changed": sum(1 for r in records if r["perturbation"]["changed"]),
        "n_edits": sum(len(f["edits"]) for r in records for f in r["perturbation"]["fields"].values()),
        "already_complete": complete,
        "drift": summarise_drift([r["perturbation"].get("drift") for r in records],
                                 note=None if config.drift_embedding else EMBEDDING_OPT_IN),
        "measured_preservation": measured_preservation(config.method, language, spec),
    }
    if spec.min_similarity is not None:
        summary["similarity"] = summarise_similarity(
            [block for r in records for block in r["perturbation"]["fields"].values()],
            minimum=spec.min_similarity, measure=measure_label(language))
    return summary


#: Why ``perturb`` lines carry no cosine unless asked.
EMBEDDING_OPT_IN = "no cosine: perturb measures it only with --drift-embedding (it loads torch and the model)"


def line_drift(records: Sequence[dict[str, Any]], *, embedding: bool, device: str = "auto"
               ) -> list[dict[str, Any]]:
    """Each record's drift: its perturbed fields joined, against the same fields of the original."""
    from robusteval.analysis.drift import DriftMeter, join_fields
    from robusteval.data.example import example_fields
    from robusteval.perturbations.dataset import example_from_record

    meter = DriftMeter("auto" if embedding else "char", device=device)
    originals, perturbed = [], []
    for record in records:
        blocks = record["perturbation"]["fields"]
        names = list(blocks)
        originals.append(join_fields({name: block["original"] for name, block in blocks.items()}, names))
        perturbed.append(join_fields(example_fields(example_from_record(record)), names))
    return meter.measure(originals, perturbed)
