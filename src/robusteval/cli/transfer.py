"""``robusteval transfer``: replay a MATCHA run's successful perturbed questions on another model."""

from __future__ import annotations

import argparse
from pathlib import Path

from robusteval.cli.common import (
    add_command,
    add_model_options,
    add_out_option,
    build_backend,
    judge_loader,
    model_identity,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args, narrow_help
from robusteval.errors import UserError

COLUMNS = ["model", "n_transferred", "n_original_correct", "n_success", "transfer_rate"]


#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "transfer"
HELP = "replay a MATCHA run's successful perturbed questions on another model"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.attacks.matcha.transfer_config import TransferConfig

    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Black-box transfer (MATCHA paper): every token-level perturbed question that succeeded in "
        "a 'robusteval attack matcha' run is asked again, together with its original question, to another model "
        "(typically one behind an API) with the source run's answer-first prompt. Transfer rate = questions "
        "whose answer stays correct while the judge says the reasoning is wrong, among those the model answers "
        "correctly on the original question.",
        example="robusteval transfer --from runs/matcha-token \\\n"
        "    --model openai:gpt-4o-mini@https://api.openai.com/v1 --temperature 0.7 --out runs/transfer-4o-mini",
    )
    add_config_arguments(parser, TransferConfig)
    add_model_options(parser)
    add_out_option(parser)
    narrow_help(parser, search=False)  # --help-all: the judging settings --help leaves out (--judge-chat, --error-classifier)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.attacks.matcha.transfer import model_label, source_of, transfer, transfer_identity
    from robusteval.attacks.matcha.transfer_config import TransferConfig
    from robusteval.lifecycle import open_run
    from robusteval.metrics.matcha_summary import categories, categories_text
    from robusteval.report.tables import format_rate, print_exclusions, print_summary_table

    config = config_from_args(TransferConfig, args)
    if Path(args.out).resolve() == Path(config.source).resolve():
        raise UserError("--out must be a new directory, not the --from run")
    source = source_of(config)  # a bad source run fails here, before the model loads
    identity = transfer_identity(config, model_identity(args.model, args), source)
    info = {"source_run": str(Path(config.source).resolve()), "limit": config.limit, "batch_size": args.batch_size}
    load = (lambda: build_backend(args.model, args)) if source.items else None
    with open_run(args.out, identity, info=info, load=load) as (store, backend):
        shared = {args.model: backend} if backend is not None else {}
        summary = transfer(config, backend, store, load_judge=judge_loader(args, shared), batch_size=args.batch_size)
    if not source.items:
        print(f"{config.source}: no successful perturbations to transfer ({source.n_outcomes} outcome records, "
              "none with outcome 'success'); wrote an empty summary")
        print(f"run directory: {args.out}")
        return 0
    shown = categories(summary)
    row = {**summary, "transfer_rate": format_rate(summary["transfer_rate"], summary.get("transfer_rate_ci95")),
           **{c.key: format_rate(c.rate, c.ci) for c in shown}, "outcomes": categories_text(summary)}
    print_summary_table(f"MATCHA transfer from {model_label(source.identity.get('model'))} "
                        f"(T={config.temperature}; every rate [95% interval] over n_original_correct, whose "
                        "outcomes sum to it)", [row], [*COLUMNS, *(c.key for c in shown), "outcomes"])
    print_exclusions(summary)
    print(f"judge: reasoning={summary['judges']['reasoning']}; transfer rate = successes / questions the model "
          "answers correctly on the original question")
    print(f"run directory: {args.out}")
    return 0
