"""``robusteval judges``: the judges themselves. ``judges audit`` measures how a judge agrees with labels.

A thin shell over :func:`robusteval.judges.audit.audit_judge`; loads a model only for LLM judges.
"""

from __future__ import annotations

import argparse

from robusteval.cli.common import HelpFormatter, add_backend_options, add_command, judge_loader
from robusteval.cli.configflags import add_config_arguments, config_from_args

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "judges"
HELP = "check the reasoning judges against labelled chains of thought"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.judges.audit_config import AuditConfig

    group = subparsers.add_parser(
        COMMAND, help=HELP,
        description="Judges decide whether a chain of thought is wrong (MATCHA's success needs a kept answer with "
        "reasoning judged wrong). 'judges audit' measures a judge against a labelled set.",
        epilog="example:\n  robusteval judges audit --judge arith+grounding --labelled tests/data/judge_audit.jsonl",
        formatter_class=HelpFormatter,
    )
    sub = group.add_subparsers(dest="judges_command", metavar="SUBCOMMAND", required=True)
    parser = add_command(
        sub, "audit",
        help="agreement, Cohen's kappa, precision and recall per error category of a judge on a labelled set",
        description="Asks the judge about every labelled chain of thought (JSONL: question, reference_cot, "
        "perturbed_cot, label correct|incorrect, category; see docs/judges.md) and prints agreement, Cohen's kappa, "
        "precision and recall of 'incorrect' per error category, the error-type accuracy of the flagged items, "
        "false alarms per kind of correct item and the disagreeing items. With --out, model verdicts are cached "
        "in that run directory and summary.json holds every figure (field 'agreement').",
        example="robusteval judges audit --judge arith+grounding --labelled tests/data/judge_audit.jsonl \\\n"
        "    --out runs/audit-arith-grounding",
    )
    add_config_arguments(parser, AuditConfig, required=("judge", "labelled"))
    parser.add_argument("--out", metavar="DIR", help="run directory: caches model verdicts, writes summary.json")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="disagreeing items printed (all are in "
                        "summary.json)")
    add_backend_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.judges.audit import AuditConfig, audit_judge
    from robusteval.metrics.stats import wilson_interval
    from robusteval.report.tables import format_rate, print_summary_table

    config = config_from_args(AuditConfig, args)
    summary = audit_judge(config, out=args.out, load_model=judge_loader(args, {}))
    overall = summary["agreement"]
    counts = overall["confusion"]
    tp, fp, fn, tn = counts["tp"], counts["fp"], counts["fn"], counts["tn"]
    # Each rate with its Wilson interval over its own denominator (all items; flagged; truly incorrect).
    shares = {"accuracy": (tp + tn, overall["n"]), "precision": (tp, tp + fp), "recall": (tp, tp + fn)}
    print_summary_table(f"judge audit: {summary['judge']} on {config.labelled} ({summary['n']} items: "
                        f"{summary['n_correct']} correct, {summary['n_incorrect']} incorrect; rates with their "
                        "95% intervals)",
                        [{"judge": summary["judge"], **{k: overall[k] for k in ("kappa", "f1")},
                          **{k: format_rate(overall[k], wilson_interval(*shares[k])) for k in shares},
                          **counts, "unparsed": summary["n_unparsed"]}],
                        ["judge", "accuracy", "kappa", "precision", "recall", "f1", "tp", "fp", "fn", "tn", "unparsed"])
    rows = [{"category": name, **row, "recall": format_rate(row["recall"], wilson_interval(row["flagged"], row["n"]))}
            for name, row in summary["per_category"].items()]
    print_summary_table("per error category: recall of its incorrect items; precision of the flagged items typed "
                        "with it (label incorrect / also of that category)", rows,
                        ["category", "n", "flagged", "recall", "n_typed", "precision", "type_precision"])
    alarms = [{"correct item": kind, **row, "rate": format_rate(row["rate"], wilson_interval(row["flagged"], row["n"]))}
              for kind, row in summary["false_alarms"].items()]
    print_summary_table("false alarms on correct items", alarms, ["correct item", "n", "flagged", "rate"])
    types = summary["error_types"]
    print(f"error types of flagged incorrect items: {_pct(types['accuracy'])} right ({types['n']} items)")
    if "classifier" in summary:
        found = summary["classifier"]
        print(f"error classifier {found['name']} on its own: {_pct(found['accuracy'])} right on {found['n']} "
              f"incorrect items ({found['n_unparsed']} unreadable)")
    shown = summary["disagreements"][: max(args.show, 0)]
    print(f"disagreements: {len(summary['disagreements'])}" + (":" if shown else ""))
    for item in shown:
        print(f"  {item['id']} (line {item['line']}): labelled {item['label']}"
              f"{' (' + item['category'] + ')' if item['category'] else ''}, judge says {item['judge_says']}: "
              f"{item['why']}")
    if args.out:
        print(f"run directory: {args.out}")
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
