"""``robusteval transfer``: replay a MATCHA run's successful perturbed questions on another model."""

from __future__ import annotations

import argparse
from pathlib import Path

from robusteval.attacks.matcha.transfer import TransferRunner, load_source, transfer_summary
from robusteval.cli.attack import judge_functions, memoised_loader
from robusteval.cli.common import add_model_options, build_backend
from robusteval.cli.main import add_command, required_option
from robusteval.errors import UserError
from robusteval.lifecycle import open_run
from robusteval.report.tables import print_summary_table
from robusteval.store import unit_key

COLUMNS = ["model", "n_transferred", "n_original_correct", "n_success", "transfer_rate"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "transfer",
        help="replay a MATCHA run's successful perturbed questions on another model",
        description="Black-box transfer (MATCHA paper): every token-level perturbed question that succeeded in "
        "a 'robusteval attack matcha' run is asked again, together with its original question, to another model "
        "(typically one behind an API) with the source run's answer-first prompt. Transfer rate = questions "
        "whose answer stays correct while the judge says the reasoning is wrong, among those the model answers "
        "correctly on the original question.",
        example="robusteval transfer --from runs/matcha-token \\\n"
        "    --model openai:gpt-4o-mini@https://api.openai.com/v1 --temperature 0.7 --out runs/transfer-4o-mini",
    )
    required_option(parser, "--from", dest="source", metavar="DIR",
                    help="run directory of a token-level 'attack matcha' run (config key: source)")
    add_model_options(parser)
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (paper: 0.7)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed sent with every request")
    parser.add_argument("--judge", default=None, metavar="SPEC|arith",
                        help="reasoning judge; unset: the source run's judge. arith, a model spec, A+B, vote:A,B,C")
    parser.add_argument("--limit", type=int, default=None, help="transfer the first N successes")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="generation budget; unset: the source run's")
    parser.add_argument("--exemplars", default=None, metavar="math|yesno|PATH",
                        help="the source run's exemplar set, where it cannot be found by itself (must be the same)")
    parser.add_argument("--answer-type", default=None, choices=["number", "yesno", "math", "text", "label"],
                        help="how answers are compared; unset: inferred from the source run")
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def validate(args: argparse.Namespace) -> None:
    if args.limit is not None and args.limit <= 0:
        raise UserError("--limit must be a positive number")
    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        raise UserError("--max-new-tokens must be >= 1")
    if not args.temperature >= 0:
        raise UserError("--temperature must be >= 0")
    if Path(args.out).resolve() == Path(args.source).resolve():
        raise UserError("--out must be a new directory, not the --from run")


def run(args: argparse.Namespace) -> int:
    validate(args)
    source = load_source(args.source, exemplars=args.exemplars, answer_type=args.answer_type, limit=args.limit)
    judge_spec = args.judge or source.judge_spec
    max_new_tokens = args.max_new_tokens or source.max_new_tokens
    identity = {
        "command": "transfer",
        # The source run's own identity, not its path: the directory may be moved between invocations.
        "source_identity": unit_key(source.identity),
        "model": args.model,
        "temperature": args.temperature,
        "seed": args.seed,
        "max_new_tokens": max_new_tokens,
        "judge": judge_spec,
        "prefix_hash": unit_key(source.prompt.prefix),
        "answer_type": source.answer_type,
    }
    info = {"source_run": str(Path(args.source).resolve()), "limit": args.limit, "batch_size": args.batch_size}
    load = None if not source.items else (lambda: build_backend(args.model, args))
    with open_run(args.out, identity, info=info, load=load) as (store, backend):
        if not source.items:
            summary = transfer_summary(source, [], model=args.model, temperature=args.temperature, seed=args.seed,
                                       max_new_tokens=max_new_tokens, judges={"reasoning": judge_spec})
            store.write_summary(summary)
            print(f"{args.source}: no successful perturbations to transfer ({source.n_outcomes} outcome records, "
                  "none with outcome 'success'); wrote an empty summary")
            print(f"run directory: {args.out}")
            return 0
        assert backend is not None  # loaded by open_run when there are items
        load_judge = memoised_loader(args, {args.model: backend})
        judge_reasoning, _, names = judge_functions(store, judge_spec, "none", load_judge)
        runner = TransferRunner(backend, store, source, reasoning_judge=judge_reasoning,
                                temperature=args.temperature, seed=args.seed, max_new_tokens=max_new_tokens,
                                batch_size=args.batch_size)
        rows = runner.outcomes()
        summary = runner.summary(rows, {"reasoning": names["reasoning"]})
        store.write_summary(summary)
    print_summary_table(f"MATCHA transfer from {source.identity.get('model')} (T={args.temperature})",
                        [summary], COLUMNS)
    print(f"judge: reasoning={names['reasoning']}; transfer rate = successes / questions the model answers "
          "correctly on the original question")
    print(f"run directory: {args.out}")
    return 0
