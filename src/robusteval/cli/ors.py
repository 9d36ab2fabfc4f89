"""``robusteval ors``: the OAD-based robustness score of models from their word-importance attack runs.

A thin shell over :func:`robusteval.attacks.wordimportance.ors.ors`; loads no model.
"""

from __future__ import annotations

import argparse

from robusteval.cli.common import add_command
from robusteval.cli.configflags import add_config_arguments, config_from_args

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "ors"
HELP = "ORS robustness score from word-importance attack runs (models x methods)"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.attacks.wordimportance.ors_config import OrsConfig
    from robusteval.metrics.ors_constants import RECONSTRUCTION_NOTE

    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Reads the summary.json of `robusteval attack wordimportance` runs (several models and "
        "methods, the same perturbation rates), takes each attack success rate u_ij(alpha_k) in percent and "
        "computes the OAD lambda_ij, the global amplification beta (decision function h(z), capped at 100), "
        "rs_ij and each model's ORS (mean over methods), with n (the distinct questions attacked) and a bootstrap "
        "interval over those questions, all methods of a question together, read from the runs' records (a run "
        "whose records carry no question id falls back to resampling its examples on their own, and the output "
        "says so; a warning below --min-attacked). " + RECONSTRUCTION_NOTE,
        example="robusteval ors runs/wi-modelA-homophone runs/wi-modelA-synonym \\\n"
        "    runs/wi-modelB-homophone runs/wi-modelB-synonym --out runs/ors",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="attack run directories")
    add_config_arguments(parser, OrsConfig, required=("out",))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.attacks.wordimportance.ors import OrsConfig, ors
    from robusteval.metrics.ors_constants import RECONSTRUCTION_NOTE
    from robusteval.report.tables import format_rate, print_summary_table

    config = config_from_args(OrsConfig, args, runs=tuple(args.runs))
    report = ors(config)
    rows = [{**row, "ORS": format_rate(row["ORS"], row["ci95"], digits=2, n=row["n"])} for row in report.rows()]
    print_summary_table(f"ORS (beta={report.result.beta}, q={config.q:g}, eta={config.eta:g}; rs per method; ORS "
                        "with its 95% bootstrap interval over the questions, all methods of a question together; "
                        "n = distinct questions attacked)", rows, ["model", *report.methods, "ORS"])
    for model, block in report.intervals.items():
        if len(set(block["n_by_method"].values())) > 1:
            print(f"n of {model}: {block['n']} distinct questions; attacked per method: "
                  + ", ".join(f"{m} {n}" for m, n in block["n_by_method"].items()))
        if block["fallback"]:
            print(f"note: ORS of {model}: {block['fallback']} (n={block['n']}: {block['n_unit']})")
        if block["warning"]:
            print(f"warning: {block['warning']}")
    print(RECONSTRUCTION_NOTE)
    print(f"written: {report.path}")
    return 0
