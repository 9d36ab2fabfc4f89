"""``robusteval perturb``: a perturbed copy of a dataset, and the perturbation options other commands share."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robusteval.cli.common import add_backend_options, add_dataset_options, build_backend, load_examples
from robusteval.cli.main import add_command, required_option
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.perturbations import (
    ChangeBudget,
    MethodOptions,
    Perturbation,
    Protection,
    build_perturbation,
    detect_language,
)
from robusteval.perturbations.base import Language

PERTURB_DATASETS = ["ocnli", "jsonl", "csv", "examples", "gsm8k", "singleeq", "strategyqa", "hf"]
METHOD_HELP = (
    "C-morphonym, C-homophone, C-keyboard, C-traditional, C-pinyin, C-radical, C-shuffle, W-synonym, "
    "W-homophone, W-wordembedding, W-maskedlm, S-backtranslation (English also: C-ocr, C-swap, C-insert, C-delete)"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "perturb",
        help="write a perturbed copy of a dataset (char/word/sentence-level noise)",
        description="Perturb the text fields of every example with one method and write robusteval's example "
        "format (JSON Lines: original ids and labels, the new text, and every edit with offsets). Read it back "
        "with --dataset examples, or give it to `robusteval robustness --sets NAME=FILE`. Resumable: progress is kept in FILE.jsonl.parts/ until the file is written. Digits, placeholders "
        "and label words are never changed. Methods: " + METHOD_HELP + ".",
        example="robusteval perturb --dataset ocnli --data-file ../shared/data/ocnli/dev.json \\\n"
        "    --method C-homophone --seed 1 --out ocnli-homophone.jsonl",
    )
    add_dataset_options(parser, PERTURB_DATASETS)
    required_option(parser, "--method", metavar="METHOD", help=METHOD_HELP)
    add_perturbation_options(parser)
    add_backend_options(parser)  # for the models a method loads (translator, re-ranker)
    required_option(parser, "--out", metavar="FILE.jsonl", help="where to write the perturbed copy")
    parser.set_defaults(func=run)


def add_perturbation_options(parser: argparse.ArgumentParser, *, change_budget: bool = True) -> None:
    """Method resources and protections; ``change_budget`` adds --rate/--min-changes/--max-changes."""
    group = parser.add_argument_group("perturbation")
    group.add_argument("--language", choices=["auto", "zh", "en"], default="auto",
                       help="text language (auto: detected from the data)")
    if change_budget:
        group.add_argument("--rate", type=float, default=None,
                           help="share of characters/words to change (default: the method's, 0.1 char / 0.15 word)")
        group.add_argument("--min-changes", type=int, default=None,
                           help="at least this many changes per text (default: 3 for character-level methods)")
        group.add_argument("--max-changes", type=int, default=None,
                           help="at most this many changes per text (default: 15 for character-level methods)")
    group.add_argument("--seed", type=int, default=0, help="random seed (per example and field)")
    group.add_argument("--perturb-fields", default=None, metavar="F1,F2",
                       help="text fields to perturb (default: the question, plus the hypothesis for NLI data)")
    group.add_argument("--protect-words", default="", metavar="W1,W2", help="extra words never to change")
    group.add_argument("--perturb-label-words", action="store_true",
                       help="allow changing label words that occur in the text (protected by default)")
    group.add_argument("--max-candidates", type=int, default=10, help="candidates per span (attacks query each)")
    group.add_argument("--embedding-model", metavar="PATH|hub-id",
                       help="W-wordembedding: an hf model whose input-embedding matrix gives neighbours")
    group.add_argument("--vectors", metavar="PATH", help="W-wordembedding: a word2vec/GloVe text file")
    group.add_argument("--mlm-model", metavar="PATH|hub-id", help="W-maskedlm: any HF fill-mask model")
    group.add_argument("--rerank-model", metavar="SPEC", help="W-maskedlm: causal LM that re-ranks candidates")
    group.add_argument("--translator", metavar="SPEC", help="S-backtranslation: the translator model (any backend)")
    group.add_argument("--pivot-language", default="English", help="S-backtranslation: the pivot language")


def resolve_language(args: argparse.Namespace, examples: Sequence[Example]) -> Language:
    if args.language != "auto":
        return args.language  # type: ignore[no-any-return]
    sample = " ".join(ex.question for ex in examples[:50])
    return detect_language(sample)


def perturbation_fields(args: argparse.Namespace, examples: Sequence[Example]) -> list[str]:
    if args.perturb_fields:
        return [f.strip() for f in args.perturb_fields.split(",") if f.strip()]
    fields = ["text"]
    if examples and isinstance(examples[0].meta.get("hypothesis"), str):
        fields.append("hypothesis")
    return fields


def budget_from(args: argparse.Namespace, perturbation: Perturbation) -> ChangeBudget | None:
    """The method's default budget with any of --rate/--min-changes/--max-changes applied."""
    if args.rate is None and args.min_changes is None and args.max_changes is None:
        return None
    default: ChangeBudget = getattr(perturbation, "default_budget", ChangeBudget())
    try:
        return ChangeBudget(
            rate=default.rate if args.rate is None else args.rate,
            minimum=default.minimum if args.min_changes is None else args.min_changes,
            maximum=default.maximum if args.max_changes is None else args.max_changes,
        )
    except ValueError as exc:
        raise UserError(f"--rate/--min-changes/--max-changes: {exc}") from exc


def protection_from(args: argparse.Namespace, examples: Sequence[Example], extra_words: Sequence[str] = ()
                    ) -> Protection:
    words = {w.strip() for w in args.protect_words.split(",") if w.strip()}
    if not args.perturb_label_words:
        words |= {ex.answer for ex in examples if ex.answer_type == "label"}
        words |= set(extra_words)
    return Protection(words=frozenset(words))


def method_options(args: argparse.Namespace) -> MethodOptions:
    translator = build_backend(args.translator, args) if getattr(args, "translator", None) else None
    return MethodOptions(
        max_candidates=args.max_candidates,
        embedding_model=args.embedding_model,
        vectors=args.vectors,
        mlm_model=args.mlm_model,
        rerank_model=args.rerank_model,
        translator=translator,
        pivot_language=args.pivot_language,
        device=getattr(args, "device", "auto"),
    )


def perturbation_identity(args: argparse.Namespace) -> dict[str, Any]:
    """The perturbation settings that change outputs (for run identities)."""
    return {
        "seed": args.seed,
        "rate": getattr(args, "rate", None),
        "min_changes": getattr(args, "min_changes", None),
        "max_changes": getattr(args, "max_changes", None),
        "perturb_fields": args.perturb_fields,
        "protect_words": args.protect_words,
        "perturb_label_words": args.perturb_label_words,
        "max_candidates": args.max_candidates,
        "embedding_model": args.embedding_model,
        "vectors": args.vectors,
        "mlm_model": args.mlm_model,
        "rerank_model": args.rerank_model,
        "translator": args.translator,
        "pivot_language": args.pivot_language,
    }


def finished_output(path: Path, settings: str, examples: Sequence[Example]) -> list[dict[str, Any]] | None:
    """The records of ``path`` when it is a complete copy written with the same settings, else None."""
    import json

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


def run(args: argparse.Namespace) -> int:
    """Perturb into a work directory beside --out (one unit per example, so a killed run resumes), then write
    --out atomically and remove the work directory. A complete --out with the same settings is kept as is."""
    import shutil

    from robusteval.cli.common import data_identity
    from robusteval.lifecycle import open_run
    from robusteval.perturbations.dataset import perturb_examples_stored
    from robusteval.store import unit_key, write_jsonl_atomic

    examples = load_examples(args)
    language = resolve_language(args, examples)
    if args.translator is None and args.method.startswith("S-"):
        raise UserError(f"{args.method} needs --translator SPEC (the model that translates)")
    work_dir = Path(f"{args.out}.parts")
    identity = {"command": "perturb", **data_identity(args), "method": args.method, "language": language,
                **perturbation_identity(args)}
    settings = unit_key(identity, [ex.id for ex in examples])
    records = finished_output(Path(args.out), settings, examples)
    if records is not None:
        print(f"{args.out} is already complete for these settings; nothing to do")
    else:
        with open_run(work_dir, identity, info={"limit": args.limit},
                      load=lambda: build_perturbation(args.method, language, method_options(args))
                      ) as (store, perturbation):
            assert perturbation is not None  # narrowing for type checkers: load() was given
            budget = budget_from(args, perturbation)
            records = perturb_examples_stored(
                store, examples, perturbation, fields=perturbation_fields(args, examples), seed=args.seed,
                budget=budget, protect=protection_from(args, examples),
            )
        # The settings' fingerprint in every line lets a re-run see that the file is complete.
        records = [{**r, "perturbation": {**r["perturbation"], "settings": settings}} for r in records]
        write_jsonl_atomic(args.out, records)
        shutil.rmtree(work_dir)
    n_changed = sum(1 for r in records if r["perturbation"]["changed"])
    n_edits = sum(len(f["edits"]) for r in records for f in r["perturbation"]["fields"].values())
    print(f"{args.method} ({language}): {n_changed}/{len(records)} examples changed, {n_edits} edits -> {args.out}")
    return 0
