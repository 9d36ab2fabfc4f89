"""``robusteval first-word``: the plugin's command, built with robusteval's own flag helpers."""

from __future__ import annotations

import argparse
from typing import Any

from robusteval.cli.common import (
    add_command,
    add_model_options,
    build_backend,
    model_identity,
    required_option,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args

COMMAND = "first-word"
HELP = "is the first word of the reply the gold label? (a plugin)"


def register(subparsers: Any) -> None:
    from robusteval.data.spec import classification_datasets
    from robusteval_demo_plugin.method import FirstWordConfig

    parser = add_command(subparsers, COMMAND, help=HELP, description=HELP,
                         example="robusteval first-word --model hf:./tiny --dataset jsonl --data-file yn.jsonl "
                                 "--answer-type label --out runs/fw")
    add_model_options(parser)
    add_config_arguments(parser, FirstWordConfig, choices={"dataset": classification_datasets()})
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.lifecycle import open_run
    from robusteval_demo_plugin.method import FirstWordConfig, identity
    from robusteval_demo_plugin.method import run as run_method

    config = config_from_args(FirstWordConfig, args)
    examples = config.data.load()
    with open_run(args.out, identity(config, model_identity(args.model, args), examples),
                  info={"limit": args.limit, "batch_size": args.batch_size},
                  load=lambda: build_backend(args.model, args)) as (store, backend):
        summary = run_method(config, backend, store, batch_size=args.batch_size)
    print(f"first-word accuracy: {summary['n_correct']}/{summary['n']}")
    return 0
