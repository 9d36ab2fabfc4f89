"""``robusteval eval``: answer-first accuracy of one model on one dataset (``robusteval.evaluate``)."""

from __future__ import annotations

import argparse
from typing import Any

from robusteval.cli.common import (
    add_command,
    add_model_options,
    add_out_option,
    model_identity,
    open_model_run,
    print_run_dir,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args
from robusteval.data.spec import answer_first_datasets

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "eval"
HELP = "answer-first accuracy of a model on a dataset"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.evals.answer_first.config import EvalConfig

    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Answer-first in-context evaluation: each question is asked after exemplars of the form "
        "'Q: …\\nA: The answer is X. <reasoning>'; the answer is read from 'The answer is X'.",
        example="robusteval eval --model hf:./tiny-llama --dataset gsm8k \\\n"
        "    --data-file gsm8k/test.jsonl --limit 20 --out runs/gsm8k-tiny",
    )
    add_model_options(parser)
    add_config_arguments(parser, EvalConfig, choices={"dataset": answer_first_datasets()})
    add_out_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.evals.answer_first import EvalConfig, eval_identity, evaluate
    from robusteval.report.tables import format_rate, print_summary_table
    config = config_from_args(EvalConfig, args)
    examples = config.data.load()  # bad data fails here, before the model loads
    identity = eval_identity(config, model_identity(args.model, args), examples)
    info = {"limit": args.limit, "batch_size": args.batch_size}
    with open_model_run(args, identity, info) as (store, backend):
        summary = evaluate(config, backend, store, batch_size=args.batch_size)
    row = {**summary, "acc": format_rate(summary["acc"], summary.get("acc_ci95"))}
    print_summary_table("answer-first accuracy [95% interval]", [row], ["model", "dataset", "n", "n_correct", "acc"])
    print_reply_counts(dict(summary))
    skipped = summary.get("skip_reasons") or {}
    if skipped:  # outside n: each was named on its own line when skipped
        detail = ", ".join(f"{reason} {count}" for reason, count in skipped.items())
        print(f"not asked: {sum(skipped.values())} ({detail})")
    print_run_dir(args.out)
    return 0


def print_reply_counts(summary: dict[str, Any]) -> None:
    """The lines of a summary's answers with no reply to read (``eval``, ``variants eval``): the reasoning format
    and the traces the budget cut, the traces closed by force, the empty replies; each a count of its block's n
    with its share and 95% interval."""
    from robusteval.text.thinking import THINKING_TRUNCATED

    thinking = summary.get("reasoning_format")
    if thinking:  # a thinking model: answers read from its replies; traces cut by the budget have none
        cut = summary.get("thinking_truncated") or {}
        print(f"reasoning format: {thinking['kind']} (answers read from the reply after the trace); "
              f"{THINKING_TRUNCATED}: {cut.get('count', 0)} of {cut.get('n', summary.get('n'))}"
              f"{_rate(cut)}, counted wrong")
        forced = summary.get("thinking_forced")
        if forced:
            print(f"trace closed by force (--max-thinking-tokens): {forced['count']} of {forced['n']}"
                  f"{_rate(forced)}")
    empty = summary.get("no_reply")
    if empty:  # replies with nothing in them: wrong, counted apart
        detail = ", ".join(f"{reason} {count}" for reason, count in empty["reasons"].items())
        print(f"no reply: {empty['count']} of {empty['n']}{_rate(empty)}, counted wrong ({detail})")


def _rate(block: dict[str, Any]) -> str:
    """" (share [95% interval])" of a counted block (``thinking_truncated``, ``no_reply``), "" without one."""
    from robusteval.metrics.formatting import format_rate

    value = block.get("value")
    return f" ({format_rate(value, block.get('ci95'))})" if isinstance(value, float) else ""
