"""``robusteval robustness``: accuracy on a dataset and on perturbed copies of it, and the RB-index."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.cli.common import (
    add_dataset_options,
    add_model_options,
    build_backend,
    data_identity,
    load_examples,
)
from robusteval.cli.main import add_command, required_option
from robusteval.cli.perturb import (
    add_perturbation_options,
    budget_from,
    method_options,
    perturbation_fields,
    perturbation_identity,
    protection_from,
    resolve_language,
)
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    example_fields,
    predicted_label,
)
from robusteval.lifecycle import open_run
from robusteval.metrics.robustness import robustness_summary
from robusteval.perturbations.registry import method_info
from robusteval.report.tables import print_summary_table
from robusteval.runner import run_units
from robusteval.store import RunStore, file_sha256

DATASETS = ["ocnli", "jsonl", "csv", "examples", "hf"]


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
        raise UserError("--sets: name at least one perturbation method or perturbed file")
    if len(set(names)) != len(names):
        raise UserError(f"--sets: set names repeat: {', '.join(names)}")
    for spec in specs:
        if spec.path is not None and not os.path.isfile(spec.path):
            raise UserError(f"--sets {spec.name}: no such file: {spec.path}")
    return specs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "robustness",
        help="accuracy on perturbed copies of a dataset and the RB-index",
        description="Classify the original examples and each perturbed set (the same examples) with an LLM used as "
        "a classifier (project-written prompt template; hard label read from the generation, soft label from "
        "label log-probs when the backend can score). Reports accuracy per set, the drop, and "
        "RB-index = (1/(T*Acc_org)) * sum_i (Acc_org - Acc_i) with paired-bootstrap 95% CIs. Perturbed sets are "
        "method names (generated here, seeded) or files written by `robusteval perturb` or by the "
        "word-importance attack (examples missing from a file count as unchanged).",
        example="robusteval robustness --model hf:./tiny-llama --dataset ocnli \\\n"
        "    --data-file ../shared/data/ocnli/dev.json --sets C-homophone,C-traditional,W-synonym \\\n"
        "    --limit 200 --out runs/ocnli-rb",
    )
    add_model_options(parser)
    add_dataset_options(parser, DATASETS)
    required_option(parser, "--sets", metavar="M1,M2,NAME=FILE", help="perturbed sets: method names or files")
    parser.add_argument("--template", default=None, metavar="nli-zh|text|PATH",
                        help="classification prompt template (default: nli-zh for OCNLI, else text)")
    parser.add_argument("--label-mode", choices=["hard", "soft"], default="hard",
                        help="which label the accuracy uses: read from the generation, or argmax of label "
                        "log-probs (needs an hf model)")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for the CIs")
    add_perturbation_options(parser)
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def template_for(args: argparse.Namespace, examples: Sequence[Example]) -> ClassificationTemplate:
    source = args.template or ("nli-zh" if args.dataset == "ocnli" else "text")
    labels = sorted({ex.answer for ex in examples})
    template = ClassificationTemplate.load(source, labels)
    unknown = sorted({ex.answer for ex in examples} - set(template.labels))
    if unknown:
        raise UserError(f"template '{template.name}' has no label for dataset labels: {', '.join(unknown)}")
    return template


def load_file_sets(specs: Sequence[SetSpec]) -> dict[str, list[Example]]:
    """The perturbed sets given as files, read (and checked) before any model loads."""
    from robusteval.data.loaders import load_dataset

    return {spec.name: load_dataset("examples", spec.path) for spec in specs if spec.path is not None}


def perturbed_sets(
    args: argparse.Namespace, store: RunStore, examples: Sequence[Example], specs: Sequence[SetSpec],
    template: ClassificationTemplate, file_sets: dict[str, list[Example]],
) -> dict[str, list[Example]]:
    """Each set's version of every example, in the original order; generated sets are stored as units."""
    from robusteval.perturbations import build_perturbation
    from robusteval.perturbations.dataset import example_from_record, perturb_examples_stored

    language = resolve_language(args, examples)
    fields = perturbation_fields(args, examples)
    label_words = [w for words in template.labels.values() for w in words]
    protect = protection_from(args, examples, label_words)
    out: dict[str, list[Example]] = {}
    options = None
    for spec in specs:
        if spec.name in file_sets:
            by_id = {ex.id: ex for ex in file_sets[spec.name]}
            out[spec.name] = [by_id.get(ex.id, ex) for ex in examples]
            continue
        options = options or method_options(args)
        perturbation = build_perturbation(spec.method or spec.name, language, options)
        records = perturb_examples_stored(store, examples, perturbation, fields=fields, seed=args.seed,
                                          budget=budget_from(args, perturbation), protect=protect)
        out[spec.name] = [example_from_record(r) for r in records]
    return out


def run(args: argparse.Namespace) -> int:
    examples = load_examples(args)
    specs = parse_sets(args.sets)
    template = template_for(args, examples)
    file_sets = load_file_sets(specs)
    language = resolve_language(args, examples)
    for spec in specs:  # unknown method names fail here, before a model loads or --out is claimed
        if spec.method is not None:
            method_info(spec.method, language)
    identity = {
        "command": "robustness",
        "model": args.model,
        **data_identity(args),
        **template.identity(),
        **perturbation_identity(args),
        "language": args.language,
    }
    info = {"limit": args.limit, "sets": args.sets, "label_mode": args.label_mode,
            "set_files": {s.name: {"path": s.path, "sha256": file_sha256(s.path)} for s in specs if s.path}}
    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        classifier = LabelClassifier(backend, template, store, soft=True if args.label_mode == "soft" else None)
        sets = perturbed_sets(args, store, examples, specs, template, file_sets)
        # Classify every distinct text once: unchanged examples in a set reuse the original's answer.
        versions = [("original", ex) for ex in examples] + [(name, ex) for name, exs in sets.items() for ex in exs]
        records = run_units(
            store, "classify", [ex for _, ex in versions],
            key_of=lambda ex: classifier.key(example_fields(ex)),
            compute=lambda batch: classifier.query([example_fields(ex) for ex in batch]),
            id_of=lambda ex: ex.id, batch_size=args.batch_size, description="classify",
        )
        n = len(examples)
        by_set: dict[str, list[dict[str, Any]]] = {"original": records[:n]}
        for i, name in enumerate(sets):
            by_set[name] = records[n * (i + 1) : n * (i + 2)]
        summary = build_summary(args, backend.name, template, examples, sets, by_set, soft=bool(classifier.soft))
        path = store.write_summary(summary)
    rows = [{"set": "original", "acc": summary["acc_original"], "drop": None, "changed": None}] + [
        {"set": name, "acc": summary["acc"][name], "drop": summary["sets"][name]["drop"],
         "changed": summary["sets"][name]["n_changed"]}
        for name in sets
    ]
    print_summary_table(f"accuracy under perturbation ({args.label_mode} labels, n={n})", rows,
                        ["set", "acc", "drop", "changed"])
    rb = summary["rb_index"]
    ci = summary["rb_index_ci95"]
    print(f"RB-index: {'undefined (original accuracy is 0)' if rb is None else f'{rb:.4f}'}"
          + (f"  95% CI [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""))
    print(f"run directory: {args.out}  (summary: {path})")
    return 0


def build_summary(
    args: argparse.Namespace, model: str, template: ClassificationTemplate, examples: Sequence[Example],
    sets: dict[str, list[Example]], by_set: dict[str, list[dict[str, Any]]], *, soft: bool,
) -> dict[str, Any]:
    def correct(name: str, mode: str) -> list[bool]:
        return [predicted_label(r, mode) == ex.answer for r, ex in zip(by_set[name], examples, strict=True)]

    mode = args.label_mode
    summary = robustness_summary(correct("original", mode), {name: correct(name, mode) for name in sets},
                                 seed=args.seed, n_resamples=args.bootstrap)
    for name, exs in sets.items():
        summary["sets"][name]["n_changed"] = sum(
            1 for ex, orig in zip(exs, examples, strict=True) if example_fields(ex) != example_fields(orig)
        )
    summary["n_unparsed"] = {name: sum(1 for r in recs if r.get("label") is None) for name, recs in by_set.items()}
    if soft and mode == "hard":  # the other view, for reference
        other = robustness_summary(correct("original", "soft"), {name: correct(name, "soft") for name in sets},
                                   seed=args.seed, n_resamples=args.bootstrap)
        summary["soft"] = {k: other[k] for k in ("acc_original", "acc", "rb_index", "rb_index_ci95")}
    return {
        "model": model,
        "dataset": args.dataset,
        "data_file": args.data_file,
        "template": template.name,
        "label_mode": mode,
        "sets_spec": args.sets,
        **summary,
    }
