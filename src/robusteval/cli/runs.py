"""``robusteval runs show|export``: look into a run directory."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
from typing import Any

from robusteval.cli.main import add_command
from robusteval.store import RunStore


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        "runs", help="show or export a run directory", description="Inspect stored runs.",
        epilog="example:\n  robusteval runs show runs/gsm8k-tiny", formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="runs_command", metavar="ACTION", required=True)

    show = add_command(sub, "show", help="print a run's configuration, progress and summary",
                       description="Print what a run directory holds.", example="robusteval runs show runs/gsm8k-tiny")
    show.add_argument("run_dir", metavar="DIR")
    show.set_defaults(func=show_run)

    export = add_command(sub, "export", help="write every stored record as JSONL or CSV",
                         description="Export stored units of work (one row per unit).",
                         example="robusteval runs export runs/gsm8k-tiny --format csv --output records.csv")
    export.add_argument("run_dir", metavar="DIR")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--stage", default=None, help="only this stage (see `runs show`)")
    export.add_argument("--output", default="-", metavar="FILE", help="output file (- for stdout)")
    export.set_defaults(func=export_run)


def show_run(args: argparse.Namespace) -> int:
    with RunStore.open_existing(args.run_dir) as store:
        report = {
            "run_dir": str(store.run_dir),
            "identity": store.identity,
            "info": store.get_meta("info"),
            "units": store.stages(),
            "summary": store.get_meta("summary"),
        }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in record.items() if k != "record"}
    for key, value in record["record"].items():
        row[key] = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
    return row


def export_run(args: argparse.Namespace) -> int:
    with RunStore.open_existing(args.run_dir) as store:
        units = list(store.iter_units(args.stage))
    with contextlib.ExitStack() as stack:
        out = sys.stdout if args.output == "-" else stack.enter_context(
            open(args.output, "w", encoding="utf-8", newline=""))
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
