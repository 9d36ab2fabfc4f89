"""``robusteval attack <name>``: one subcommand per registered attack (``robusteval.attacks.base.ATTACKS``).

Each subcommand's flags come from the attack's config dataclass; running it is the same lifecycle for every
attack: load and check the data, check the run identity, lock the directory, load the model, call the
attack's pipeline, print its table.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from robusteval.cli.common import (
    add_attack_parser,
    add_out_option,
    judge_loader,
    model_identity,
    open_model_run,
)
from robusteval.cli.configflags import config_from_args, narrow_help

if TYPE_CHECKING:
    from robusteval.attacks.base import Attack

#: Options an attack's --help leaves to --help-all: backend and executor details most runs leave alone (their
#: defaults fit a local model), and the thinking format's fine print.
DETAIL_FLAGS = ("--max-concurrency", "--api-key-env", "--request-timeout", "--retry-for", "--endpoint",
                "--api-logprobs", "--reasoning-effort", "--max-tokens-field", "--decoder", "--ray-address",
                "--workers", "--threads", "--think-tags", "--max-thinking-tokens")

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "attack"
HELP = "white-box and black-box attacks"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.attacks.base import ATTACKS

    group = subparsers.add_parser(
        COMMAND, help=HELP, description="Attacks on a model: "
        + "; ".join(f"{e.name}: {e.summary}" for e in ATTACKS.entries()),
        epilog="example:\n  robusteval attack matcha --help", formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="attack_command", metavar="ATTACK", required=True)
    for entry in ATTACKS.entries():
        parser = add_attack_parser(sub, entry)
        add_out_option(parser)
        narrow_help(parser, DETAIL_FLAGS)
        parser.set_defaults(func=run, attack=entry.value)


def run(args: argparse.Namespace) -> int:
    from robusteval.report.tables import print_exclusions, print_flags, print_summary_table

    attack: Attack = args.attack
    config = config_from_args(attack.config_type, args)
    examples = config.data.load()  # bad data fails here, before the model loads
    identity = attack.identity(config, model_identity(args.model, args), examples)
    info = {"limit": config.data.limit, "batch_size": args.batch_size}
    with open_model_run(args, identity, info) as (store, backend):
        summary = attack.run(config, backend, store, load_model=judge_loader(args, {args.model: backend}),
                             batch_size=args.batch_size)
    title, rows, columns = attack.table(summary)
    print_summary_table(title, rows, columns)
    print_flags(summary)
    print_exclusions(summary)
    for note in summary.get("notes", []):
        print(f"note: {note}")
    print(f"run directory: {args.out}")
    return 0
