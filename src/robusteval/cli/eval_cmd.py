"""``robusteval eval``: answer-first accuracy of one model on one dataset."""

from __future__ import annotations

import argparse

from robusteval.cli.common import (
    add_dataset_options,
    add_model_options,
    build_backend,
    data_identity,
    load_examples,
)
from robusteval.cli.main import add_command, required_option
from robusteval.evals.answer_first import accuracy_summary, answer_first_records
from robusteval.lifecycle import open_run
from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars
from robusteval.report.tables import print_summary_table
from robusteval.store import unit_key

DATASETS = ["gsm8k", "singleeq", "strategyqa", "jsonl", "csv", "hf"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "eval",
        help="answer-first accuracy of a model on a dataset",
        description="Answer-first in-context evaluation: each question is asked after exemplars of the form "
        "'Q: …\\nA: The answer is X. <reasoning>'; the answer is read from 'The answer is X'.",
        example="robusteval eval --model hf:./tiny-llama --dataset gsm8k \\\n"
        "    --data-file ../shared/data/gsm8k/test.jsonl --limit 20 --out runs/gsm8k-tiny",
    )
    add_model_options(parser)
    add_dataset_options(parser, DATASETS)
    add_eval_options(parser)
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def add_eval_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exemplars", default=None, metavar="math|yesno|PATH",
                        help="in-context exemplars (default: built-in set matching the answer type)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation budget per answer")
    parser.add_argument("--seed", type=int, default=0, help="random seed (recorded; greedy decoding ignores it)")


def exemplar_source(args: argparse.Namespace, answer_type: str) -> str:
    """What ``load_exemplars`` takes: the --exemplars value, or the built-in set for the answer type."""
    return args.exemplars or ("yesno" if answer_type == "yesno" else "math")


def exemplars_for(args: argparse.Namespace, answer_type: str) -> AnswerFirstPrompt:
    return AnswerFirstPrompt(load_exemplars(exemplar_source(args, answer_type)))


def run(args: argparse.Namespace) -> int:
    examples = load_examples(args)
    prompt = exemplars_for(args, examples[0].answer_type)
    identity = {
        "command": "eval",
        "model": args.model,
        **data_identity(args),
        "exemplars": prompt.exemplars.name,
        "prefix_hash": unit_key(prompt.prefix),
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
    }
    info = {"limit": args.limit, "batch_size": args.batch_size}
    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        records = answer_first_records(
            backend, store, examples, prompt, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size
        )
        summary = {
            "model": backend.name,
            "dataset": args.dataset,
            "data_file": args.data_file,
            "exemplars": prompt.exemplars.name,
            **accuracy_summary(records),
        }
        path = store.write_summary(summary)
    print_summary_table("answer-first accuracy", [summary], ["model", "dataset", "n", "n_correct", "acc"])
    print(f"run directory: {args.out}  (summary: {path})")
    return 0
