"""``robusteval ors``: the OAD-based robustness score of several models from their word-importance attack runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from robusteval.cli.main import add_command, required_option
from robusteval.errors import DataError, UserError
from robusteval.metrics.ors import BETA_CAP, ETA_DEFAULT, Q_DEFAULT, RECONSTRUCTION_NOTE, ors_scores
from robusteval.report.tables import print_summary_table
from robusteval.store import SUMMARY_NAME, write_text_atomic


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "ors",
        help="ORS robustness score from word-importance attack runs (models x methods)",
        description="Reads the summary.json of `robusteval attack wordimportance` runs (several models and "
        "methods, the same perturbation rates), takes each attack success rate u_ij(alpha_k) in percent and "
        "computes the OAD lambda_ij, the global amplification beta (decision function h(z), capped at 100), "
        "rs_ij and each model's ORS (mean over methods). " + RECONSTRUCTION_NOTE,
        example="robusteval ors runs/wi-modelA-homophone runs/wi-modelA-synonym \\\n"
        "    runs/wi-modelB-homophone runs/wi-modelB-synonym --out runs/ors",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="attack run directories")
    parser.add_argument("--q", type=float, default=Q_DEFAULT, help="the OAD constant q")
    parser.add_argument("--eta", type=float, default=ETA_DEFAULT, help="the score scale eta")
    parser.add_argument("--beta-cap", type=int, default=BETA_CAP, help="largest amplification beta")
    required_option(parser, "--out", metavar="DIR", help="where to write ors.json")
    parser.set_defaults(func=run)


def read_attack_run(run_dir: str) -> dict[str, Any]:
    path = Path(run_dir) / SUMMARY_NAME
    if not path.is_file():
        raise UserError(f"{run_dir}: no {SUMMARY_NAME}; is it a finished `attack wordimportance` run?")
    try:
        summary = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(str(path), f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
    if summary.get("attack") != "wordimportance":
        raise DataError(str(path), "not a word-importance attack summary", field="attack")
    for key in ("model", "method", "asr_by_rate"):
        if key not in summary:
            raise DataError(str(path), "missing field", field=key)
    if any(value is None for value in summary["asr_by_rate"].values()):
        raise DataError(str(path), "no attacked examples (every example was skipped): no success rate",
                        field="asr_by_rate")
    return summary


def run(args: argparse.Namespace) -> int:
    table: dict[str, dict[str, list[float]]] = {}
    rate_keys: list[str] | None = None
    sources: dict[str, dict[str, str]] = {}
    for run_dir in args.runs:
        summary = read_attack_run(run_dir)
        keys = sorted(summary["asr_by_rate"], key=float)
        if rate_keys is None:
            rate_keys = keys
        elif keys != rate_keys:
            raise UserError(f"{run_dir}: rates {keys} differ from {rate_keys}; every run needs the same --rates")
        model, method = summary["model"], summary["method"]
        if method in table.get(model, {}):
            raise UserError(f"{run_dir}: model {model} with method {method} is given twice "
                            f"(also {sources[model][method]})")
        table.setdefault(model, {})[method] = [100.0 * summary["asr_by_rate"][k] for k in keys]
        sources.setdefault(model, {})[method] = run_dir
    result = ors_scores(table, q=args.q, eta=args.eta, cap=args.beta_cap)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"rates": rate_keys, "success_percent": table, "q": args.q, "eta": args.eta, "beta_cap": args.beta_cap,
               "runs": sources, **result.to_dict()}
    write_text_atomic(out / "ors.json", json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    methods = sorted({m for attacks in table.values() for m in attacks})
    rows = [{"model": model, **{m: result.scores[model].get(m) for m in methods}, "ORS": result.ors[model]}
            for model in table]
    print_summary_table(f"ORS (beta={result.beta}, q={args.q:g}, eta={args.eta:g}; rs per method)", rows,
                        ["model", *methods, "ORS"])
    print(RECONSTRUCTION_NOTE)
    print(f"written: {out / 'ors.json'}")
    return 0
