"""``robusteval robustness``: accuracy on a dataset and on perturbed copies of it, and the RB-index
(``robusteval.robustness``)."""

from __future__ import annotations

import argparse

from robusteval.cli.common import (
    add_command,
    add_model_options,
    add_out_option,
    judge_loader,
    model_identity,
    open_model_run,
    print_run_dir,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args
from robusteval.data.spec import classification_datasets

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "robustness"
HELP = "accuracy on perturbed copies of a dataset and the RB-index"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.evals.robustness.config import RobustnessConfig

    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Classify the original examples and each perturbed set (the same examples) with an LLM used as "
        "a classifier (project-written prompt template; hard label read from the generation, soft label from "
        "label log-probs when the backend can score). Reports accuracy per set, the drop, and "
        "RB-index = (1/(T*Acc_org)) * sum_i (Acc_org - Acc_i) with paired-bootstrap 95% CIs. Perturbed sets are "
        "method names (generated here, seeded) or files written by `robusteval perturb` or by the "
        "word-importance attack (examples missing from a file count as unchanged).",
        example="robusteval robustness --model hf:./tiny-llama --dataset ocnli \\\n"
        "    --data-file ocnli/dev.json --sets C-homophone,C-traditional,W-synonym \\\n"
        "    --limit 200 --out runs/ocnli-rb",
    )
    add_model_options(parser)
    add_config_arguments(parser, RobustnessConfig, choices={"dataset": classification_datasets()})
    add_out_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.evals.robustness import RobustnessConfig, robustness, robustness_identity, robustness_info
    from robusteval.evals.robustness.results.terminal import print_robustness_tables
    from robusteval.perturbations.similarity import similarity_line

    config = config_from_args(RobustnessConfig, args)
    examples = config.data.load()  # bad data, set files and methods fail here, before the model loads
    identity = robustness_identity(config, model_identity(args.model, args), examples)
    info = robustness_info(config, args.batch_size)
    with open_model_run(args, identity, info) as (store, backend):
        summary = robustness(config, backend, store, load_model=judge_loader(args, {args.model: backend}),
                             batch_size=args.batch_size)
    print_robustness_tables(summary, label_mode=config.label_mode)
    for name, entry in summary["sets"].items():  # --min-similarity: what the gate did, naming its measure
        if "similarity" in entry:
            print(f"{name}: {similarity_line(entry['similarity'])}")
    from robusteval.evals.robustness.preservation import preservation_lines
    from robusteval.perturbations.measured import notice_lines

    for line in notice_lines(entry["measured_preservation"] for entry in summary["sets"].values()
                             if "measured_preservation" in entry):  # once per method, quoting its labelled sample
        print(line)

    for line in preservation_lines(summary, with_preserved=False):  # --labels: every label's share per set
        print(line)
    print_run_dir(args.out)
    return 0
