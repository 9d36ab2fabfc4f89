"""``robusteval variants …``: symbolic variant benchmarks (VAR-MATH) - templates, instances, eval, scores.

A thin shell over :mod:`robusteval.variants.pipeline`: flags become the configs of
:mod:`robusteval.variants.configs`, the pipeline runs, this module prints. Only ``eval`` loads a model.

Exit codes: 0 all good; 1 some templates failed (reported one per line, the rest still processed) or some
templates do not reproduce their original answer; 2 unusable input (printed as one line).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from robusteval.cli.common import (
    add_command,
    add_model_options,
    add_out_option,
    model_identity,
    open_model_run,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args
from robusteval.errors import UserError

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "variants"
HELP = "symbolic variant benchmarks (VAR-MATH): draft, check, instantiate, validate, eval, score"


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Templates turn fixed math problems into families of instances; a model gets a problem "
        "right under the strict score only if it solves every instance. See docs/variants.md.",
    )
    sub = group.add_subparsers(dest="variants_command", metavar="ACTION", required=True)
    _register_instantiate(sub)
    _register_validate(sub)
    _register_eval(sub)
    _register_score(sub)
    _register_import(sub)
    _register_draft(sub)
    _register_check(sub)


# ----------------------------------------------------------------------------------------------- parsers
def _register_instantiate(sub: Any) -> None:
    from robusteval.variants.configs import InstantiateConfig

    p = add_command(
        sub,
        "instantiate",
        help="sample concrete instances from templates",
        description="Sample N distinct instances per template (seeded, reproducible; constraints honoured). "
        "With --compat var-math the original VAR-MATH generator is replayed exactly: one numpy stream "
        "seeded once, templates in the order given.",
        example="robusteval variants instantiate --compat var-math --n 5 --seed 42 \\\n"
        "    --templates var-math/templates/VAR-Math_amc23.csv,"
        "var-math/templates/VAR-Math_aime24.csv \\\n    --out var_math.jsonl\n"
        "robusteval variants instantiate --templates T.yaml --out inst.jsonl --originals originals.jsonl",
    )
    add_config_arguments(p, InstantiateConfig)
    p.set_defaults(func=run_instantiate)


def _register_validate(sub: Any) -> None:
    from robusteval.variants.configs import ValidateConfig

    p = add_command(
        sub,
        "validate",
        help="check that templates reproduce their original answers",
        description="Evaluate every template at its original values and compare with the original answer; "
        "report every template that does not reproduce it, does not load, or cannot be evaluated.",
        example="robusteval variants validate --templates src/robusteval/variants/example_templates.yaml",
    )
    add_config_arguments(p, ValidateConfig)
    p.set_defaults(func=run_validate)


def _register_eval(sub: Any) -> None:
    from robusteval.variants.configs import VariantsEvalConfig

    p = add_command(
        sub,
        "eval",
        help="run a model on instances and score strict/loose",
        description="Ask the model every instance (K samples each) with a math prompt that asks for the "
        "final answer in \\boxed{}; every generation is stored, so re-running the same command resumes. With the "
        "original problems (--originals FILE asked in the same call, written from the templates by `variants "
        "instantiate --originals FILE`; or --original-run DIR) the diagnosis says "
        "whether points are lost to memorisation or to unstable reasoning (docs/variants.md).",
        example="robusteval variants eval --model hf:./tiny-llama --instances var_math.jsonl \\\n"
        "    --originals originals.jsonl --out runs/var-math-tiny --samples 1 --max-new-tokens 512",
    )
    add_model_options(p)
    add_config_arguments(p, VariantsEvalConfig)
    add_out_option(p)
    p.set_defaults(func=run_eval)


def _register_score(sub: Any) -> None:
    from robusteval.variants.configs import ScoreConfig

    p = add_command(
        sub,
        "score",
        help="strict/loose scores of predictions made elsewhere",
        description='Grade a predictions JSONL ({"id", "prediction"} per line; repeated ids are several '
        "samples) against an instances file; print and write strict, loose and their CIs.",
        example="robusteval variants score --instances var_math.jsonl --predictions preds.jsonl",
    )
    add_config_arguments(p, ScoreConfig)
    p.set_defaults(func=run_score)


def _register_import(sub: Any) -> None:
    from robusteval.variants.configs import ImportConfig

    p = add_command(
        sub,
        "import",
        help="convert VAR-MATH CSV templates to the native YAML format",
        description="Translate VAR-MATH template CSVs (their Python expressions are parsed and rewritten, "
        "never executed) into native templates; rows that cannot be translated are reported.",
        example="robusteval variants import --templates var-math/templates/VAR-Math_amc23.csv "
        "--out amc23.yaml",
    )
    add_config_arguments(p, ImportConfig, required=("out",))
    p.set_defaults(func=run_import)


def _register_draft(sub: Any) -> None:
    from robusteval.variants.configs import DraftConfig

    p = add_command(
        sub,
        "draft",
        help="draft templates from fixed problems (numbers become variables; you write the answer)",
        description="Turn each number of a problem into a variable with a domain around its value and "
        "constraints that keep the original's properties; the answer expression is left as TODO for you, "
        "with the original answer beside it. Then run `variants check` on the file.",
        example="robusteval variants draft --question 'Mia has 4 red pencils and 3 blue pencils. How many "
        "pencils does she have?' --answer 7 --id mia\n"
        "robusteval variants draft --data-file problems.jsonl --fields question=problem,answer=solution "
        "--out drafts.yaml",
    )
    add_config_arguments(p, DraftConfig)
    p.set_defaults(func=run_draft)


def _register_check(sub: Any) -> None:
    from robusteval.variants.configs import CheckConfig

    p = add_command(
        sub,
        "check",
        help="check template files deeply: validate, domains, constraints, answers, instances",
        description="Everything `validate` checks (the original values give the original answer), then: "
        "seeded draws from the domains satisfy the constraints often enough; the answer is defined, finite, "
        "an integer where the original is and keeps its sign on every valid draw; a question text never has "
        "two answers; the instances are distinct and differ from the original. One line per finding "
        "(file:line: severity: template 'id': message); exit 1 on errors, 2 on unreadable input.",
        example="robusteval variants check drafts.yaml src/robusteval/variants/example_templates.yaml",
    )
    p.add_argument("templates", nargs="+", metavar="TEMPLATE_FILE",
                   help="native .yaml/.json or VAR-MATH .csv template files")
    add_config_arguments(p, CheckConfig)
    p.set_defaults(func=run_check)


# ----------------------------------------------------------------------------------------------- output
def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _print_scores(title: str, summary: dict[str, Any]) -> None:
    from robusteval.report.tables import print_summary_table

    row = dict(summary)
    for name in ("strict", "loose"):
        ci = summary.get(f"{name}_ci95")
        row[f"{name} 95% CI"] = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
    columns = ["model"] if "model" in summary else []
    columns += ["strict", "strict 95% CI", "loose", "loose 95% CI", "n_problems", "n_instances", "n_samples"]
    print_summary_table(title, [row], columns)


# ----------------------------------------------------------------------------------------------- commands
def run_instantiate(args: argparse.Namespace) -> int:
    from robusteval.variants.configs import InstantiateConfig
    from robusteval.variants.pipeline import instantiate

    config = config_from_args(InstantiateConfig, args)
    config.check()
    # The library writes none, either or both; the command one (or only the originals).
    if (config.out and config.out_dir) or not (config.out or config.out_dir or config.originals):
        raise UserError("give exactly one of --out FILE.jsonl or --out-dir DIR (or only --originals FILE.jsonl)")
    result = instantiate(config)
    for warning in result.warnings:
        _err(f"warning: {warning}")
    for problem in result.problems:
        _err(f"skipped: {problem}")
    for line in result.no_original:
        _err(f"warning: {line}")
    failed = len(result.problems)
    written = [str(path) for path in result.written if not config.originals or str(path) != str(config.originals)]
    parts = []
    if written:
        parts.append(f"wrote {len(result.instances)} instances from {result.n_templates} templates to "
                     + ", ".join(written))
    if config.originals:
        parts.append(f"wrote {len(result.originals)} original problems to {config.originals}"
                     + (f" ({len(result.no_original)} template(s) without one, see above)" if result.no_original
                        else ""))
    print("; ".join(parts) + (f"; {failed} template(s) failed (see above)" if failed else ""))
    return 1 if failed else 0


def run_validate(args: argparse.Namespace) -> int:
    from robusteval.variants.configs import ValidateConfig
    from robusteval.variants.pipeline import validate

    report = validate(config_from_args(ValidateConfig, args))
    for warning in report.warnings:
        _err(f"warning: {warning}")
    for check in report.checks:
        if check.status != "ok":
            where = f"{check.source}: " if check.source else ""
            _err(f"{check.status}: {where}template '{check.template_id}': {check.message}")
    counts = report.counts
    print(
        f"{len(report.checks)} templates: {counts['ok']} ok, {counts['mismatch']} mismatch, "
        f"{counts['error']} error, {counts['unchecked']} unchecked (no original values/answer)"
    )
    return 1 if report.failed else 0


def run_score(args: argparse.Namespace) -> int:
    from robusteval.variants.configs import ScoreConfig
    from robusteval.variants.pipeline import score_files

    config = config_from_args(ScoreConfig, args)
    report = score_files(config)
    unknown = report.unknown_ids
    if unknown:
        _err(f"warning: {len(unknown)} prediction(s) for ids not in {config.instances} ignored "
             f"(e.g. {unknown[0]!r})")
    if report.summary["n_missing"]:
        _err(f"warning: {report.summary['n_missing']} instance(s) have no prediction and count as wrong")
    _print_scores("variant scores", report.summary)
    print(f"scores written to {report.path}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from robusteval.cli.eval_cmd import print_reply_counts
    from robusteval.store import SUMMARY_NAME
    from robusteval.variants.configs import VariantsEvalConfig
    from robusteval.variants.pipeline import check_originals, evaluate_variants, variants_eval_identity
    from robusteval.variants.results.terminal import print_diagnosis

    config = config_from_args(VariantsEvalConfig, args)
    config.check()
    config.load_instances()  # a bad instances file fails here, before the model loads
    temperature, _ = config.sampling()
    if config.samples > 1 and temperature == 0:
        _err("warning: --samples > 1 with temperature 0 gives K identical greedy answers")
    identity = variants_eval_identity(config, model_identity(args.model, args))
    check_originals(config, identity.get("model"))  # a bad --original-run or --originals file: before the model
    info = {"limit": config.limit, "batch_size": args.batch_size}
    with open_model_run(args, identity, info) as (store, backend):
        summary = evaluate_variants(config, backend, store, batch_size=args.batch_size)
    _print_scores("variant scores", dict(summary))
    print_reply_counts(dict(summary))  # generations with no reply to read: counted wrong, with their intervals
    print_diagnosis(summary["diagnosis"])
    if not summary["diagnosis"]["n_with_original"]:
        print("(no original problem evaluated: --originals FILE asks them in this call (`variants instantiate "
              "--templates T --originals FILE` writes it), --original-run DIR reads an earlier run; see "
              "docs/variants.md)")
    print(f"run directory: {args.out}  (summary: {store.run_dir / SUMMARY_NAME})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from robusteval.variants.configs import ImportConfig
    from robusteval.variants.pipeline import import_templates

    report = import_templates(config_from_args(ImportConfig, args))
    for warning in report.warnings:
        _err(f"warning: {warning}")
    for problem in report.problems:
        _err(f"skipped: {problem}")
    skipped = len(report.problems)
    print(f"wrote {len(report.templates)} templates to {report.written}"
          + (f"; {skipped} row(s) skipped" if skipped else ""))
    return 1 if skipped else 0


def run_draft(args: argparse.Namespace) -> int:
    from robusteval.variants.authoring import draft
    from robusteval.variants.configs import DraftConfig

    report = draft(config_from_args(DraftConfig, args))
    if report.written is None:
        sys.stdout.write(report.text)
    else:
        print(f"wrote {len(report.drafts)} draft template(s) to {report.written}; write each answer, then: "
              f"robusteval variants check {report.written}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from robusteval.variants.authoring import check
    from robusteval.variants.configs import CheckConfig

    report = check(config_from_args(CheckConfig, args, templates=list(args.templates)))
    for warning in report.warnings:
        _err(f"warning: {warning}")
    for finding in report.findings:
        print(finding.text())
    print(report.summary_line())
    return 1 if report.failed else 0
