"""``robusteval study STUDY.toml``: models x methods x datasets from one file, one leaderboard and one report
(``robusteval.study``).

Exit codes: 0 every cell finished; 1 some cells failed (each reported in one line, the others finished);
2 an unusable study file or a cell whose directory holds a different run (one line, before any model loads).
"""

from __future__ import annotations

import argparse

from robusteval.cli.common import add_command, add_executor_options

EXAMPLE = """\
[[models]]
spec = "hf:./tiny-a"
[[models]]
spec = "hf:./tiny-b"
dtype = "float32"

[datasets.math]
dataset = "jsonl"
data_file = "questions.jsonl"
limit = 20

[methods.eval]
datasets = ["math"]
max_new_tokens = 64

[methods.matcha]
datasets = ["math"]
steps = 3"""


#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "study"
HELP = "many models x methods x datasets from one TOML file: one leaderboard, one report"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Runs every cell (model x method x dataset) of a study file, each an ordinary resumable run "
        "directory <out>/<model>/<method>/<dataset> made by the same pipeline as the method's own command (eval, "
        "robustness, variants, attack matcha, attack wordimportance); each model is loaded once for all its "
        "cells. Then prints and writes one leaderboard across models (every number with n and 95% interval; "
        "ORS over the word-importance cells), paired tests between every two models on each number (McNemar or a "
        "paired bootstrap on the shared examples, Holm-adjusted: pairwise.csv) and report.html, which opens with "
        "them. Re-run the same command to resume; a cell "
        "that fails is reported and the others go on. See docs/study.md. A study file:\n\n" + EXAMPLE,
        example="robusteval study study.toml\nrobusteval study study.toml --out runs/study --executor ray",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="study directory (default: the file's out, else a folder named after the file)")
    parser.add_argument("--no-report", action="store_true", help="do not write report.html")
    add_executor_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.report.tables import print_summary_table
    from robusteval.studies.study import study

    result = study(args.study, args.out, report=not args.no_report)
    board = result.leaderboard
    rows, columns = board.rows()
    if rows:
        print_summary_table("study leaderboard: value [95% interval] and n per model", rows, columns)
    if board.comparisons:  # which models differ: paired tests on the shared examples, Holm-adjusted
        from robusteval.report.compare import PAIRWISE_NOTE
        from robusteval.report.pairing import ROW_COLUMNS, comparison_row

        print_summary_table("pairwise tests: which models differ on each number",
                            [comparison_row(c) for c in board.comparisons], ROW_COLUMNS)
        print(f"pairwise tests: {PAIRWISE_NOTE}")
    for note in board.notes + [f"{c.name}: {c.note}" for c in board.columns if c.note]:
        print(f"note: {note}")
    for cell in result.failed:
        print(f"failed: {cell.cell}: {cell.error} (run directory {cell.run_dir}"
              + (f"; traceback in {cell.log}" if cell.log else "") + ")")
    print(f"study directory: {result.out}  (leaderboard.csv, leaderboard.json, pairwise.csv, study.json, study.log"
          + (", report.html" if result.report else "") + ")")
    if result.failed:
        print(f"{len(result.failed)} of {len(result.cells)} cells failed; fix them and re-run the same command "
              "(finished cells are not recomputed)")
        return 1
    return 0
