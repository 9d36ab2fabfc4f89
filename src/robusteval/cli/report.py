"""``robusteval report RUN_DIR... --out report.html``: one self-contained HTML page of any runs.

A thin shell over :func:`robusteval.report.build.build_report`; loads no model and imports no torch.
"""

from __future__ import annotations

import argparse

from robusteval.cli.common import add_command

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "report"
HELP = "one self-contained HTML report (tables, charts, examples) of any runs"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Read run directories of any method (MATCHA attacks, transfer, sweeps, VAR-MATH evals, "
        "perturbed benchmarks, word-importance attacks) and ORS results, and write one HTML file with the papers' "
        "tables and figures, a leaderboard per method and an example browser. The file needs no network: open it "
        "from disk or send it as an attachment. A directory holding runs (a quick-start output) is searched.",
        example="robusteval report runs/matcha-llama runs/matcha-qwen runs/varmath --out report.html\n"
        "robusteval report robusteval-quickstart --out quickstart.html",
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run, sweep or ORS directories")
    parser.add_argument("--out", default="report.html", metavar="FILE", help="the HTML file to write")
    parser.add_argument("--title", default=None, help="the page title")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.report.build import build_report

    path = build_report(args.run_dirs, args.out, title=args.title)
    print(f"report: {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0
