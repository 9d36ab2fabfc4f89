"""``robusteval variants …``: symbolic variant benchmarks (VAR-MATH) - templates, instances, eval, scores.

Exit codes: 0 all good; 1 some templates failed (reported one per line, the rest still processed) or some
templates do not reproduce their original answer; 2 unusable input (printed as one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from robusteval.cli.main import add_command, required_option
from robusteval.errors import UserError
from robusteval.report.tables import print_summary_table
from robusteval.store import write_jsonl_atomic

_SCORE_COLUMNS = ["strict", "loose", "instance_accuracy", "n_problems", "n_instances", "n_samples"]


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        "variants",
        help="symbolic variant benchmarks (VAR-MATH): instantiate, validate, eval, score",
        description="Templates turn fixed math problems into families of instances; a model gets a problem "
        "right under the strict score only if it solves every instance. See docs/variants.md.",
    )
    sub = group.add_subparsers(dest="variants_command", metavar="ACTION", required=True)
    _register_instantiate(sub)
    _register_validate(sub)
    _register_eval(sub)
    _register_score(sub)
    _register_import(sub)


# ---------------------------------------------------------------------------------------------------- parsers
def _templates_option(parser: argparse.ArgumentParser) -> None:
    required_option(
        parser,
        "--templates",
        metavar="PATH[,PATH…]",
        help="template files, comma-separated, in order: native .yaml/.json or VAR-MATH .csv",
    )
    parser.add_argument(
        "--prefix-ids",
        action="store_true",
        help="prefix template ids with their file name (when ids collide across files)",
    )


def _register_instantiate(sub: Any) -> None:
    p = add_command(
        sub,
        "instantiate",
        help="sample concrete instances from templates",
        description="Sample N distinct instances per template (seeded, reproducible; constraints honoured). "
        "With --compat var-math the original VAR-MATH generator is replayed exactly: one numpy stream "
        "seeded once, templates in the order given.",
        example="robusteval variants instantiate --compat var-math --n 5 --seed 42 \\\n"
        "    --templates ../shared/data/var-math/templates/VAR-Math_amc23.csv,"
        "../shared/data/var-math/templates/VAR-Math_aime24.csv \\\n    --out var_math.jsonl",
    )
    _templates_option(p)
    p.add_argument("--n", type=int, default=5, help="instances per template")
    p.add_argument("--seed", type=int, default=42, help="random seed")
    p.add_argument("--compat", choices=["var-math"], default=None, help="replay another generator exactly")
    p.add_argument(
        "--exclude-original",
        action="store_true",
        help="never use a template's original values (native mode; needs 'original' in the template)",
    )
    p.add_argument("--out", metavar="FILE.jsonl", help="write all instances to one JSONL file")
    p.add_argument("--out-dir", metavar="DIR", help="write one JSONL per template file (<file stem>.jsonl)")
    p.set_defaults(func=run_instantiate)


def _register_validate(sub: Any) -> None:
    p = add_command(
        sub,
        "validate",
        help="check that templates reproduce their original answers",
        description="Evaluate every template at its original values and compare with the original answer; "
        "report every template that does not reproduce it, does not load, or cannot be evaluated.",
        example="robusteval variants validate --templates src/robusteval/variants/example_templates.yaml",
    )
    _templates_option(p)
    p.add_argument("--json", metavar="FILE", default=None, help="also write the full report as JSON")
    p.set_defaults(func=run_validate)


def _grading_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("grading")
    g.add_argument("--rel-tol", type=float, default=1e-4, help="relative tolerance of numeric comparison")
    g.add_argument("--grade-timeout", type=float, default=3.0, help="seconds per symbolic comparison")
    g.add_argument(
        "--accept-percent",
        action="store_true",
        help="also accept the prediction x100 or /100 (as VAR-MATH's grader does)",
    )
    g.add_argument("--bootstrap-rounds", type=int, default=1000, help="bootstrap rounds of the 95%% CIs")
    g.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap")


def _register_eval(sub: Any) -> None:
    from robusteval.cli.common import add_model_options

    p = add_command(
        sub,
        "eval",
        help="run a model on instances and score strict/loose",
        description="Ask the model every instance (K samples each) with a math prompt that asks for the final "
        "answer in \\boxed{}; every generation is stored, so re-running the same command resumes.",
        example="robusteval variants eval --model hf:./tiny-llama --instances var_math.jsonl \\\n"
        "    --out runs/var-math-tiny --samples 1 --max-new-tokens 512",
    )
    add_model_options(p)
    required_option(p, "--instances", metavar="FILE.jsonl", help="instances from `variants instantiate`")
    required_option(p, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    p.add_argument("--samples", type=int, default=1, help="samples per instance (K)")
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature (default: 0 = greedy for K=1, 0.6 for K>1)",
    )
    p.add_argument(
        "--top-p", type=float, default=None, help="nucleus sampling (default: 1.0 for K=1, 0.95 for K>1)"
    )
    p.add_argument("--max-new-tokens", type=int, default=2048, help="generation budget per answer")
    p.add_argument("--seed", type=int, default=0, help="seed of sample k is seed + k")
    p.add_argument("--chat", action="store_true", help="send the prompt as a chat message (openai backends)")
    p.add_argument("--limit", type=int, default=None, help="only the first N instances")
    _grading_options(p)
    p.set_defaults(func=run_eval)


def _register_score(sub: Any) -> None:
    p = add_command(
        sub,
        "score",
        help="strict/loose scores of predictions made elsewhere",
        description='Grade a predictions JSONL ({"id", "prediction"} per line; repeated ids are several '
        "samples) against an instances file; print and write strict, loose and their CIs.",
        example="robusteval variants score --instances var_math.jsonl --predictions preds.jsonl",
    )
    required_option(p, "--instances", metavar="FILE.jsonl", help="instances with gold answers")
    required_option(p, "--predictions", metavar="FILE.jsonl", help="model predictions")
    p.add_argument(
        "--out",
        metavar="FILE.json",
        default=None,
        help="where to write the scores (default: <predictions>.scores.json)",
    )
    _grading_options(p)
    p.set_defaults(func=run_score)


def _register_import(sub: Any) -> None:
    p = add_command(
        sub,
        "import",
        help="convert VAR-MATH CSV templates to the native YAML format",
        description="Translate VAR-MATH template CSVs (their Python expressions are parsed and rewritten, "
        "never executed) into native templates; rows that cannot be translated are reported.",
        example="robusteval variants import --templates ../shared/data/var-math/templates/VAR-Math_amc23.csv "
        "--out amc23.yaml",
    )
    required_option(p, "--templates", metavar="FILE.csv", help="a VAR-MATH template CSV")
    required_option(p, "--out", metavar="FILE.yaml", help="native template file to write (.yaml or .json)")
    p.set_defaults(func=run_import)


# ---------------------------------------------------------------------------------------------------- helpers
def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _load(args: argparse.Namespace) -> tuple[list[tuple[str, Any]], int]:
    from robusteval.variants.template import load_templates, split_paths

    loaded = load_templates(split_paths(args.templates), prefix_ids=args.prefix_ids)
    n_problems = 0
    for _, result in loaded:
        for warning in result.warnings:
            _err(f"warning: {warning}")
        n_problems += len(result.problems)
    return loaded, n_problems


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise UserError(f"{flag} must be a positive number")


# ---------------------------------------------------------------------------------------------------- commands
def run_instantiate(args: argparse.Namespace) -> int:
    from robusteval.variants.sampler import CompatGenerator, instantiate

    _positive(args.n, "--n")
    if bool(args.out) == bool(args.out_dir):
        raise UserError("give exactly one of --out FILE.jsonl or --out-dir DIR")
    if args.compat and args.exclude_original:
        raise UserError(
            "--exclude-original cannot be combined with --compat var-math (the original has no such option)"
        )
    loaded, _ = _load(args)
    generator = CompatGenerator(args.seed) if args.compat else None  # one stream across all files
    per_file: list[tuple[str, list[dict[str, Any]]]] = []
    failed = 0
    n_templates = 0
    for path, result in loaded:
        for problem in result.problems:
            _err(f"skipped: {problem}")
        failed += len(result.problems)
        instances, problems, warnings = instantiate(
            result.templates,
            args.n,
            args.seed,
            compat=args.compat,
            exclude_original=args.exclude_original,
            generator=generator,
        )
        for problem in problems:
            _err(f"skipped: {problem}")
        for warning in warnings:
            _err(f"warning: {warning}")
        failed += len(problems)
        n_templates += len(result.templates) - len(problems)
        per_file.append((path, [inst.to_json(compat=bool(args.compat)) for inst in instances]))

    written = []
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_instances(out, [row for _, rows in per_file for row in rows], ascii_only=bool(args.compat))
        written.append(str(out))
    else:
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for path, rows in per_file:
            target = out_dir / (Path(path).stem + ".jsonl")
            _write_instances(target, rows, ascii_only=bool(args.compat))
            written.append(str(target))
    total = sum(len(rows) for _, rows in per_file)
    print(
        f"wrote {total} instances from {n_templates} templates to {', '.join(written)}"
        + (f"; {failed} template(s) failed (see above)" if failed else "")
    )
    return 1 if failed else 0


def _write_instances(path: Path, rows: list[dict[str, Any]], *, ascii_only: bool) -> None:
    # Compat output uses json.dumps defaults, like the original generator, so files match byte for byte.
    write_jsonl_atomic(path, rows, ensure_ascii=ascii_only)


def run_validate(args: argparse.Namespace) -> int:
    from robusteval.variants.validate import validate_templates

    loaded, _ = _load(args)
    checks = []
    for _, result in loaded:
        checks += validate_templates(result.templates, result.problems)
    counts = {s: sum(1 for c in checks if c.status == s) for s in ("ok", "mismatch", "error", "unchecked")}
    for check in checks:
        if check.status != "ok":
            where = f"{check.source}: " if check.source else ""
            _err(f"{check.status}: {where}template '{check.template_id}': {check.message}")
    print(
        f"{len(checks)} templates: {counts['ok']} ok, {counts['mismatch']} mismatch, {counts['error']} error, "
        f"{counts['unchecked']} unchecked (no original values/answer)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"counts": counts, "templates": [c.to_json() for c in checks]},
                indent=2,
                ensure_ascii=False,
                default=str,
            )
            + "\n",
            encoding="utf-8",
        )
    return 1 if counts["mismatch"] or counts["error"] else 0


def _grading_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if args.bootstrap_rounds < 0:
        raise UserError("--bootstrap-rounds must be 0 or more")
    return {
        "rel_tol": args.rel_tol,
        "timeout": args.grade_timeout,
        "accept_percent": args.accept_percent,
        "bootstrap_rounds": args.bootstrap_rounds,
        "seed": args.bootstrap_seed,
    }


def _print_scores(title: str, summary: dict[str, Any]) -> None:
    row = dict(summary)
    for name in ("strict", "loose"):
        ci = summary.get(f"{name}_ci95")
        row[f"{name} 95% CI"] = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
    columns = ["model"] if "model" in summary else []
    columns += ["strict", "strict 95% CI", "loose", "loose 95% CI", "n_problems", "n_instances", "n_samples"]
    print_summary_table(title, [row], columns)


def run_score(args: argparse.Namespace) -> int:
    from robusteval.variants.evaluate import load_instances, load_predictions, score

    instances = load_instances(args.instances)
    predictions, unknown = load_predictions(args.predictions, {i.id for i in instances})
    if unknown:
        _err(
            f"warning: {len(unknown)} prediction(s) for ids not in {args.instances} ignored (e.g. {unknown[0]!r})"
        )
    summary, graded = score(instances, predictions, **_grading_kwargs(args))
    if summary["n_missing"]:
        _err(f"warning: {summary['n_missing']} instance(s) have no prediction and count as wrong")
    summary = {"instances": args.instances, "predictions": args.predictions, **summary, "graded": graded}
    out = Path(args.out) if args.out else Path(args.predictions).with_suffix(".scores.json")
    out.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _print_scores("variant scores", summary)
    print(f"scores written to {out}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from robusteval.cli.common import build_backend
    from robusteval.lifecycle import open_run
    from robusteval.store import file_sha256, unit_key
    from robusteval.variants.evaluate import (
        MATH_PROMPT,
        generate_all,
        load_instances,
        predictions_from_records,
        score,
        write_jsonl,
    )

    _positive(args.samples, "--samples")
    _positive(args.limit, "--limit")
    _positive(args.max_new_tokens, "--max-new-tokens")
    grading = _grading_kwargs(args)
    temperature = args.temperature if args.temperature is not None else (0.0 if args.samples == 1 else 0.6)
    top_p = args.top_p if args.top_p is not None else (1.0 if args.samples == 1 else 0.95)
    if args.samples > 1 and temperature == 0:
        _err("warning: --samples > 1 with temperature 0 gives K identical greedy answers")
    instances = load_instances(args.instances)
    if args.limit:
        instances = instances[: args.limit]
    identity = {
        "command": "variants eval",
        "model": args.model,
        "instances": str(args.instances),
        "instances_sha256": file_sha256(args.instances),
        "samples": args.samples,
        "temperature": temperature,
        "top_p": top_p,
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
        "chat": args.chat,
        "prompt_hash": unit_key(MATH_PROMPT),
    }
    info = {"limit": args.limit, "batch_size": args.batch_size}
    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        records = generate_all(
            backend,
            store,
            instances,
            samples=args.samples,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            chat=args.chat,
            batch_size=args.batch_size,
        )
        predictions = predictions_from_records(records)
        summary, graded = score(instances, predictions, **grading)
        run_dir = Path(args.out)
        write_jsonl(
            run_dir / "predictions.jsonl",
            [{"id": r["id"], "sample": r["sample"], "prediction": r["completion"]} for r in records],
        )
        write_jsonl(run_dir / "graded.jsonl", graded)
        summary = {
            "model": backend.name,
            "instances": str(args.instances),
            "temperature": temperature,
            "top_p": top_p,
            "max_new_tokens": args.max_new_tokens,
            **summary,
        }
        path = store.write_summary(summary)
    _print_scores("variant scores", summary)
    print(f"run directory: {args.out}  (summary: {path})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from robusteval.variants.template import templates_from_data
    from robusteval.variants.varmath_csv import import_csv

    result = import_csv(args.templates)
    for warning in result.warnings:
        _err(f"warning: {warning}")
    # Keep only what the native checker accepts, so the written file loads without surprises.
    checked = templates_from_data({"version": 1, "templates": result.templates}, args.templates)
    ok_ids = {t.id for t in checked.templates}
    problems = result.problems + checked.problems
    for problem in problems:
        _err(f"skipped: {problem}")
    keep = [t for t in result.templates if str(t["id"]) in ok_ids]
    out = Path(args.out)
    data = {"version": 1, "templates": keep}
    if out.suffix.lower() == ".json":
        out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        from robusteval.variants.yaml_io import dump_yaml

        out.write_text(dump_yaml(data), encoding="utf-8")
    print(f"wrote {len(keep)} templates to {out}" + (f"; {len(problems)} row(s) skipped" if problems else ""))
    return 1 if problems else 0
