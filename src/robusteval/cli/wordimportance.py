"""``robusteval attack wordimportance``: black-box hard-label word-importance attacks on a classifier."""

from __future__ import annotations

import argparse
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
    method_options,
    perturbation_fields,
    perturbation_identity,
    protection_from,
    resolve_language,
)
from robusteval.cli.robustness import template_for
from robusteval.errors import UserError
from robusteval.lifecycle import open_run
from robusteval.models.registry import parse_spec
from robusteval.perturbations import MethodOptions, Perturbation, build_perturbation
from robusteval.perturbations.registry import method_info
from robusteval.report.tables import print_summary_table
from robusteval.runner import run_units
from robusteval.store import unit_key

STAGE = "wordimportance"
DATASETS = ["ocnli", "jsonl", "csv", "examples", "hf"]
#: The patent's nine Chinese methods, in its order.
NINE_METHODS = ("C-traditional", "C-pinyin", "C-radical", "C-morphonym", "C-shuffle", "W-homophone", "W-synonym",
                "W-wordembedding", "W-maskedlm")
ENGLISH_METHODS = ("C-keyboard", "C-ocr", "C-swap", "C-shuffle", "W-synonym", "W-wordembedding", "W-maskedlm")


def register_wordimportance(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "wordimportance",
        help="black-box hard-label attack: rank words, then perturb them in order",
        description="Word-importance attack on a model used as a classifier (it only has to return a label). "
        "Ranking: importance of a word = drop of the confidence in the true label when it is deleted (label "
        "log-probs when the backend can score, else the share of sampled answers naming the true label). "
        "Perturbation: in that order, keep the candidate that lowers the confidence most; success when the "
        "greedy label flips; stop before the perturbed-word rate exceeds alpha or when the query budget is spent. "
        "--method is one of " + ", ".join(NINE_METHODS) + ", or 'combined' (all of them). Reports attack success "
        "rate, accuracy under attack, perturbed-word % and queries per rate.",
        example="robusteval attack wordimportance --model hf:./tiny-nli --dataset ocnli \\\n"
        "    --data-file ../shared/data/ocnli/dev.json --method C-homophone --rates 0.05,0.1,0.2,0.3 \\\n"
        "    --budget 300 --limit 50 --out runs/wi-homophone --write-adv runs/adv-homophone.jsonl",
    )
    add_model_options(parser)
    add_dataset_options(parser, DATASETS)
    required_option(parser, "--method", metavar="METHOD|combined", help="the perturbation method")
    parser.add_argument("--rates", default="0.05,0.1,0.2,0.3", metavar="A1,A2",
                        help="perturbation rates alpha: the largest share of words that may change")
    parser.add_argument("--budget", type=int, default=500, help="query budget per example (ranking included)")
    parser.add_argument("--confidence", choices=["auto", "logprob", "sample", "greedy"], default="auto",
                        help="confidence estimator: auto = logprob when the backend scores, else sample")
    parser.add_argument("--n-samples", type=int, default=5, help="sample: answers sampled per text")
    parser.add_argument("--temperature", type=float, default=0.7, help="sample: sampling temperature")
    parser.add_argument("--no-rank", action="store_true",
                        help="baseline: perturb words in text order without the ranking stage")
    parser.add_argument("--template", default=None, metavar="nli-zh|text|PATH",
                        help="classification prompt template (default: nli-zh for OCNLI, else text)")
    parser.add_argument("--write-adv", metavar="FILE.jsonl",
                        help="also write the successful adversarial examples as a perturbed set (for robustness)")
    add_perturbation_options(parser, change_budget=False)
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def parse_rates(text: str) -> tuple[float, ...]:
    try:
        rates = tuple(sorted({float(part) for part in text.split(",") if part.strip()}))
    except ValueError as exc:
        raise UserError(f"--rates: expected numbers like 0.05,0.1, got {text!r}") from exc
    if not rates or any(not 0 < r <= 1 for r in rates):
        raise UserError(f"--rates: every rate must be in (0, 1], got {text!r}")
    return rates


def build_methods(args: argparse.Namespace, language: str, options: MethodOptions) -> list[Perturbation]:
    """One method, or every method of the language for ``combined`` (those lacking a resource are named)."""
    if args.method != "combined":
        return [build_perturbation(args.method, language, options)]  # type: ignore[arg-type]
    names = NINE_METHODS if language == "zh" else ENGLISH_METHODS
    methods = []
    for name in names:
        if name == "W-maskedlm" and not options.mlm_model:
            print("combined: leaving out W-maskedlm (give --mlm-model to include it)")
            continue
        if name == "W-wordembedding" and language == "zh" and not (options.embedding_model or options.vectors):
            print("combined: leaving out W-wordembedding (give --embedding-model or --vectors to include it)")
            continue
        methods.append(build_perturbation(name, language, options))  # type: ignore[arg-type]
    return methods


def _options_with_target_embeddings(args: argparse.Namespace, options: MethodOptions) -> MethodOptions:
    """Embedding neighbours default to the target's own embedding matrix when the target is a local model."""
    if options.embedding_model or options.vectors:
        return options
    spec = parse_spec(args.model)
    if spec.kind != "hf" or args.method not in ("W-wordembedding", "combined"):
        return options
    from dataclasses import replace

    return replace(options, embedding_model=spec.target)


def run(args: argparse.Namespace) -> int:
    from robusteval.attacks.wordimportance import (
        WordImportanceConfig,
        attack_example,
        attack_summary,
        default_confidence,
    )
    from robusteval.evals.classification import LabelClassifier

    examples = load_examples(args)
    rates = parse_rates(args.rates)
    template = template_for(args, examples)
    language = resolve_language(args, examples)
    combined = NINE_METHODS if language == "zh" else ENGLISH_METHODS
    for name in combined if args.method == "combined" else [args.method]:
        method_info(name, language)  # an unknown --method fails before a model loads or --out is claimed
    identity = {
        "command": "attack wordimportance",
        "model": args.model,
        **data_identity(args),
        **template.identity(),
        **perturbation_identity(args),
        "method": args.method,
        "language": language,
        "rates": list(rates),
        "budget": args.budget,
        "confidence": args.confidence,
        "n_samples": args.n_samples,
        "temperature": args.temperature,
        "rank": not args.no_rank,
    }
    with open_run(args.out, identity, info={"limit": args.limit},
                  load=lambda: build_backend(args.model, args)) as (store, backend):
        classifier = LabelClassifier(backend, template, store, soft=True if args.confidence == "logprob" else None)
        confidence = default_confidence(classifier) if args.confidence == "auto" else args.confidence
        if confidence == "logprob" and not classifier.soft:
            raise UserError(f"--confidence logprob needs label log-probs; {backend.name} returns text only")
        config = WordImportanceConfig(
            rates=rates, budget=args.budget, confidence=confidence, n_samples=args.n_samples,
            temperature=args.temperature, fields=tuple(perturbation_fields(args, examples)), language=language,
            rank=not args.no_rank, seed=args.seed,
        )
        options = _options_with_target_embeddings(args, method_options(args))
        methods = build_methods(args, language, options)
        label_words = [w for words in template.labels.values() for w in words]
        protect = protection_from(args, examples, label_words)

        def compute(batch: list[Any]) -> list[dict[str, Any]]:
            return [attack_example(ex, classifier, methods, config, protect=protect) for ex in batch]

        records = run_units(store, STAGE, examples, key_of=lambda ex: unit_key(STAGE, ex.to_dict()), compute=compute,
                            id_of=lambda ex: ex.id, description=f"attack {args.method}")
        summary = {
            "attack": "wordimportance",
            "model": backend.name,
            "model_spec": args.model,
            "method": args.method,
            "methods": [m.name for m in methods],
            "dataset": args.dataset,
            "data_file": args.data_file,
            "language": language,
            "confidence": confidence,
            "budget": args.budget,
            "rank": not args.no_rank,
            "rates": list(rates),
            **attack_summary(records, rates),
        }
        path = store.write_summary(summary)
        if args.write_adv:
            write_adversarial_set(args.write_adv, examples, records, args.method)
    rows = [{"rate": rate, **values} for rate, values in summary["by_rate"].items()]
    print_summary_table(
        f"word-importance attack: {args.method} on {backend.name} (n={summary['n']})", rows,
        ["rate", "n_success", "n_failed", "n_skipped", "original_accuracy", "accuracy_under_attack",
         "attack_success_rate", "avg_perturbed_word_pct", "avg_words_per_input", "avg_queries"],
    )
    print(f"run directory: {args.out}  (summary: {path})")
    return 0


def write_adversarial_set(path: str, examples: list[Any], records: list[dict[str, Any]], method: str) -> None:
    """Successful adversarial examples in robusteval's example format (the "Adv" set for `robustness`)."""
    from robusteval.evals.classification import with_fields
    from robusteval.store import write_jsonl_atomic

    out = []
    for example, record in zip(examples, records, strict=True):
        if record["status"] != "success":
            continue
        adversarial = with_fields(example, record["adversarial"])
        row = adversarial.to_dict()
        row["perturbation"] = {"method": f"wordimportance:{method}", "changed": True, "queries": record["queries"],
                               "fields": {name: {"original": record["original"][name], "edits": edits}
                                          for name, edits in record["edits"].items()}}
        out.append(row)
    write_jsonl_atomic(path, out)
    print(f"adversarial set: {len(out)} successful examples -> {path}")
