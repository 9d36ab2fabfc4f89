"""``robusteval runs show|export|compare``: look into run directories, or rank several side by side."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from robusteval.cli.common import add_command
from robusteval.errors import UserError

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "runs"
HELP = "show, export or compare run directories"


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        COMMAND, help=HELP, description="Inspect stored runs.",
        epilog="example:\n  robusteval runs show runs/gsm8k-tiny", formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="runs_command", metavar="ACTION", required=True)

    show = add_command(sub, "show", help="print a run's configuration, progress and headline numbers",
                       description="Print what a run directory holds: a short summary (model, data, each headline "
                       "number with its n and 95% interval, what was left out, progress); --json prints "
                       "everything (identity, info, the whole summary).",
                       example="robusteval runs show runs/gsm8k-tiny\nrobusteval runs show runs/gsm8k-tiny --json")
    show.add_argument("run_dir", metavar="DIR")
    show.add_argument("--json", action="store_true",
                      help="print the whole record as JSON: overview, rates, identity, info, units, summary")
    show.set_defaults(func=show_run)

    export = add_command(sub, "export", help="write every stored record as JSONL or CSV",
                         description="Export stored units of work (one row per unit).",
                         example="robusteval runs export runs/gsm8k-tiny --format csv --output records.csv")
    export.add_argument("run_dir", metavar="DIR")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--stage", default=None, help="only this stage (see `runs show`)")
    export.add_argument("--output", default="-", metavar="FILE", help="output file (- for stdout)")
    export.set_defaults(func=export_run)

    compare = add_command(sub, "compare", help="a leaderboard per method and group of comparable runs (table, "
                          "CSV or LaTeX)",
                          description="Rank runs of the same method by the method's headline number (the HTML "
                          "report's comparison section). Only comparable runs (same data and its hash, label "
                          "mode, judges, success rule, settings...) rank together: one leaderboard per group, "
                          "each saying how its runs differ from the other groups'. A number over fewer than "
                          "--min-n examples (MATCHA: n_attacked) or with a 95% interval wider than "
                          "--max-interval-width is shown but not ranked. Every rate comes with its n and "
                          "interval. Under each table, every pair of its runs is tested on the method's headline "
                          "numbers, paired on the examples both hold (McNemar or a paired bootstrap, p Holm-adjusted "
                          "over every test printed); runs of different groups are not paired. Sweep and ORS "
                          "directories, and directories holding runs, are read too.",
                          example="robusteval runs compare runs/matcha-llama runs/matcha-qwen\n"
                          "robusteval runs compare runs/* --format csv --output leaderboard.csv\n"
                          "robusteval runs compare runs/* --format latex --output tables.tex\n"
                          "robusteval runs compare studies/main --format latex --digits 1 "
                          "--rename tiny-llama=TinyLlama-1.1B")
    compare.add_argument("run_dirs", nargs="+", metavar="DIR")
    compare.add_argument("--format", choices=["table", "csv", "latex"], default="table",
                         help="latex: booktabs tables, MATCHA in the paper's Table 1/2 and 3 layouts")
    compare.add_argument("--output", default="-", metavar="FILE", help="output file (- for stdout)")
    compare.add_argument("--max-interval-width", type=float, default=0.5, metavar="SHARE",
                         help="do not rank a number whose 95%% interval is wider than this share of the scale "
                         "(0.5 = 50 points)")
    compare.add_argument("--min-n", type=int, default=10, metavar="N",
                         help="do not rank a number over fewer examples than this (MATCHA: n_attacked)")
    compare.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                         help="latex: print model OLD (as the table names it) as NEW; repeatable. A study "
                         "directory's models are named as the study names them unless renamed here")
    compare.add_argument("--digits", type=int, default=None, metavar="N",
                         help="latex: decimals of every number (default: each number's own, 1 for percentages)")
    compare.add_argument("--pairwise", default=None, metavar="FILE",
                         help="also write the pairwise tests to FILE: as CSV (one row per pair of runs and number), "
                              "or as LaTeX tables where FILE ends in .tex (--format latex includes them too)")
    compare.set_defaults(func=compare_runs)


def show_run(args: argparse.Namespace) -> int:
    from robusteval.methods import results_of_command
    from robusteval.report.rates import rates_block
    from robusteval.runs import load_run

    run = load_run(args.run_dir)
    summary = run.summary or {}
    results = results_of_command(run.command)
    # The method's own entries: its outcomes by category, counting rules, flags, and what it left out.
    own = dict(results.show(run)) if results is not None and results.show is not None else {}
    left_out = own.pop("left_out", None)
    report = {
        "run_dir": str(run.path),
        "overview": run.overview(),
        # Each headline number with its 95% interval and what its n counts.
        "rates": rates_block(run),
        **({"outcomes": own.pop("outcomes")} if own.get("outcomes") else {}),
        "left_out": left_out if left_out is not None else {
            k: summary.get(k) for k in ("skip_reasons", "exclusions") if summary.get(k) is not None},
        **{k: v for k, v in own.items() if k != "outcomes"},
        "identity": run.identity,
        "info": run.info,
        "units": run.stages,
        "summary": run.summary,
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print("\n".join(show_lines(run, report)))
    return 0


def show_lines(run: Any, report: dict[str, Any]) -> list[str]:
    """``runs show`` without ``--json``: a few readable lines (each rate with its n and interval) in place of
    the whole JSON record."""
    from robusteval.report.collect import dataset_name, short_model

    overview, summary = report["overview"], run.summary or {}
    model = str(overview.get("model") or summary.get("model") or "?")
    state = "finished" if run.summary is not None else "unfinished (no summary yet: re-run its command to resume)"
    lines = [f"{report['run_dir']}: {overview.get('command') or '?'}, {state}"]

    def field(name: str, value: Any) -> None:
        if value not in (None, "", {}, []):
            lines.append(f"  {name:<10} {value}")

    setting = ", ".join(f"{k} {overview[k]}" for k in ("dtype", "device") if overview.get(k))
    field("model", f"{short_model(model)}  ({model}{'; ' + setting if setting else ''})")
    field("data", dataset_name(run))
    for i, (metric, text) in enumerate(report["rates"].items()):
        lines.append(f"  {'rates' if i == 0 else '':<10} {metric}: {text}")
    field("outcomes", report.get("outcomes"))
    diagnosis = summary.get("diagnosis")
    if isinstance(diagnosis, dict):
        field("diagnosis", diagnosis.get("line"))
    for name, value in report["left_out"].items():
        if _compact(value):  # a count of 0 (exclusions {"unjudged": 0}) leaves nothing out
            field("left out", f"{name}: {_compact(value)}")
    field("counting", report.get("counting"))
    for flag in report.get("flags") or []:
        field("flag", flag)
    field("units", ", ".join(f"{stage} {n}" for stage, n in report["units"].items()))
    field("seeds", ", ".join(f"{k} {v}" for k, v in (overview.get("seeds") or {}).items()))
    field("versions", ", ".join(f"{k} {v}" for k, v in (overview.get("versions") or {}).items()))
    lines.append(f"(everything, identity and summary included: robusteval runs show {report['run_dir']} --json)")
    return lines


def _compact(value: Any) -> str:
    """``{"a": 3, "b": 0}`` as ``a 3`` (nothing for zeros and empties)."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_compact(v)}" for k, v in value.items() if v not in (None, 0, {}, []))
    return "" if value in (None, 0, {}, []) else str(value)


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in record.items() if k != "record"}
    for key, value in record["record"].items():
        row[key] = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
    return row


@contextlib.contextmanager
def _open_output(name: str) -> Iterator[TextIO]:
    """``--output``: stdout for ``-``, else the file (its missing parent directories created); a path that
    cannot be written is a one-line UserError."""
    if name == "-":
        yield sys.stdout
        return
    target = Path(name)
    if target.is_dir():
        raise UserError(f"--output {name}: is a directory; give a file name")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = target.open("w", encoding="utf-8", newline="")
    except OSError as exc:
        raise UserError(f"--output {name}: cannot write: {exc.strerror or exc}") from None
    with handle:
        yield handle


def export_run(args: argparse.Namespace) -> int:
    from robusteval.runs import load_run

    units = load_run(args.run_dir).units(args.stage)  # a misspelt --stage is refused with the closest, not empty
    with _open_output(args.output) as out:
        if args.format == "jsonl":
            for unit in units:
                out.write(json.dumps(unit, ensure_ascii=False) + "\n")
        else:
            rows = [_flatten(u) for u in units]
            columns: list[str] = []
            for row in rows:
                columns += [c for c in row if c not in columns]
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    if args.output != "-":
        print(f"wrote {len(units)} records to {args.output}", file=sys.stderr)
    return 0


def _clean_records(board: Any) -> list[dict[str, Any]]:
    """The board's CSV records with its numbers (each value and interval end) free of floating-point noise
    (:func:`~robusteval.metrics.formatting.clean_number`); counts and text as they are."""
    from robusteval.metrics.formatting import clean_number
    from robusteval.report.model import Num

    numbers = {column for row in board.rows for column, cell in row.items() if isinstance(cell, Num)}
    cleaned = {f"{column}{suffix}" for column in numbers for suffix in ("", "_ci_low", "_ci_high")}
    return [{key: clean_number(value) if key in cleaned and isinstance(value, float) else value
             for key, value in record.items()} for record in board.records()]


def _write_pairwise(args: argparse.Namespace, boards: Any) -> None:
    """``--pairwise FILE``: the pairwise tests as CSV, or as LaTeX tables where FILE ends in ``.tex``; said on
    stderr."""
    if str(args.pairwise).endswith(".tex"):
        from robusteval.report.latex import pairwise_latex, parse_renames

        text = pairwise_latex(args.run_dirs, max_width=args.max_interval_width, min_n=args.min_n,
                              digits=args.digits, rename=parse_renames(args.rename))
        kind = "LaTeX"
    else:
        from robusteval.report.pairing import pairwise_csv

        text, kind = pairwise_csv([c for board in boards for c in board.comparisons]), "CSV"
    with _open_output(args.pairwise) as handle:
        handle.write(text)
    if args.pairwise != "-":
        tests = sum(len(board.comparisons) for board in boards)
        print(f"wrote {tests} pairwise tests as {kind} to {args.pairwise}", file=sys.stderr)


def compare_runs(args: argparse.Namespace) -> int:
    from robusteval.report.compare import check_thresholds
    from robusteval.report.compare import compare_runs as leaderboards

    check_thresholds(args.max_interval_width, args.min_n, names=("--max-interval-width", "--min-n"))
    thresholds = {"max_width": args.max_interval_width, "min_n": args.min_n}
    latex_pairwise = str(args.pairwise or "").endswith(".tex")
    if args.format != "latex" and not latex_pairwise and (args.rename or args.digits is not None):
        raise UserError(f"{'--rename' if args.rename else '--digits'} is for --format latex (or --pairwise FILE.tex)")
    if args.format == "latex":
        from robusteval.report.latex import compare_latex, parse_renames

        renames = parse_renames(args.rename)
        text = compare_latex(args.run_dirs, **thresholds, digits=args.digits, rename=renames)
        with _open_output(args.output) as out:
            out.write(text)
        if args.output != "-":
            print(f"wrote LaTeX tables (pairwise tests included) to {args.output}", file=sys.stderr)
    boards = leaderboards(args.run_dirs, **thresholds)
    if args.pairwise:
        _write_pairwise(args, boards)
    if args.format == "latex":
        return 0
    with _open_output(args.output) as out:
        if args.format == "csv":
            rows = [row for board in boards for row in _clean_records(board)]
            columns = list(dict.fromkeys(c for row in rows for c in row))
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        else:
            from robusteval.report.compare import HEADINGS, board_kind
            from robusteval.report.model import Num
            from robusteval.report.tables import format_num, print_summary_table

            names = dict(HEADINGS)
            for board in boards:
                columns = board.shown
                if not any(row.get(columns[-1]) for row in board.rows):  # every row ranked: no reasons column
                    columns = columns[:-1]
                rows = [{names.get(c, c): format_num(v) if isinstance(v, Num) else v for c, v in row.items()}
                        for row in board.rows]
                # Columns that would fold every cell of one table get tables of their own below (the kind's
                # ``own_tables``); a row's flags go under the table, one line per flagged run.
                kind = board_kind(board.method)
                apart = kind.own_tables if kind is not None else ()
                taken = {c for _, own in apart for c in own}
                main = [c for c in columns if c not in taken and c != "flags"]
                print_summary_table(board.title, rows, [names.get(c, c) for c in main], file=out)
                for title, own in apart:
                    present = [c for c in columns if c in own]
                    if present:
                        print_summary_table(title, rows, [names.get(c, c) for c in ("rank", "model", *present)],
                                            file=out)
                for row in board.rows:
                    if row.get("flags"):
                        print(f"{row['model']}: {row['flags']}", file=out)
                print(f"comparability key {board.group}" + (f"; {board.apart}" if board.apart else ""), file=out)
                if board.comparisons:  # which pairs differ: paired tests, Holm-adjusted over every table printed
                    from robusteval.report.pairing import ROW_COLUMNS, comparison_row

                    print_summary_table(f"{board.title}: pairwise tests (paired on shared examples)",
                                        [comparison_row(c) for c in board.comparisons], ROW_COLUMNS, file=out)
            if len(boards) > len({board.method for board in boards}):
                print("runs in different groups of one method are not paired: never tested against each other",
                      file=out)
            flagged = any("flags" in board.shown for board in boards)
            print("numbers: value [95% interval]; n: the examples a rate rests on (MATCHA's UR/SR/WR: n_attacked, "
                  "every attacked example, the headline denominator; its outcomes sum to it)" + ("; ⚑: a flagged rate (why: under its table)" if flagged
                                                 else ""), file=out)
            if any(board.comparisons for board in boards):
                from robusteval.report.compare import PAIRWISE_NOTE

                print(f"pairwise tests: {PAIRWISE_NOTE}", file=out)
    if args.output != "-":
        print(f"wrote {sum(len(b.rows) for b in boards)} rows to {args.output}", file=sys.stderr)
    return 0
