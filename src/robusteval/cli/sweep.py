"""``robusteval sweep <attack>``: one attack over a grid of settings, seeds and models, with a mean(std) table.

``--models a,b,c`` makes it a cross-scale stress test: the same attack on every model, one comparison table.
"""

from __future__ import annotations

import argparse

from robusteval.cli.attack import DETAIL_FLAGS
from robusteval.cli.common import add_attack_parser, add_out_option, judge_loader
from robusteval.cli.configflags import config_from_args, narrow_help
from robusteval.errors import UserError

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "sweep"
HELP = "one attack over a grid of settings, seeds and models (paper Fig. 4, Table 3, scale tests)"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.attacks.base import ATTACKS

    group = subparsers.add_parser(
        COMMAND, help=HELP,
        description="Runs one attack at every grid point and seed (and for every model of --models), one "
        "resumable run directory each, and prints mean (std) over seeds of ACC/UR/SR/WR and error-type shares.",
        epilog="example:\n  robusteval sweep matcha --model hf:./tiny --dataset jsonl --data-file q.jsonl \\\n"
        "      --grid steps=1,3 --grid insert_ratio=0.1,0.2 --seeds 0,1 --out runs/sweep\n"
        "  robusteval sweep matcha --models embedded,hf:./my-model --dataset gsm8k --data-file test.jsonl \\\n"
        "      --limit 50 --out runs/scale",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="sweep_attack", metavar="ATTACK", required=True)
    for entry in ATTACKS.entries():
        example = (entry.value.example.replace("robusteval attack ", "robusteval sweep ")
                   + " \\\n    --grid steps=1,3 --seeds 0,1")
        parser = add_attack_parser(sub, entry, help_prefix="sweep: ", model_required=False, example=example)
        options = parser.add_argument_group("sweep")
        options.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2",
                             help="a setting and its values (repeatable); every combination is run")
        options.add_argument("--seeds", default="0", metavar="S1,S2", help="seeds: each point runs once per seed")
        options.add_argument("--models", default=None, metavar="SPEC,SPEC",
                             help="models compared (cross-scale); 'embedded' is the shipped Gemma 3 270M")
        add_out_option(parser, "sweep")
        narrow_help(parser, DETAIL_FLAGS)
        parser.set_defaults(func=run, attack=entry.value, attack_name=entry.name)


def run(args: argparse.Namespace) -> int:
    from robusteval.report.tables import print_summary_table
    from robusteval.studies.sweep import parse_grid, sweep, table_rows

    config = config_from_args(args.attack.config_type, args)
    grid = parse_grid(args.grid, args.attack.config_type)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--seeds {args.seeds}: expected integers like 0,1,2") from None
    models = [m.strip() for m in (args.models or "").split(",") if m.strip()]
    if args.model and models:
        raise UserError("give --model (one model) or --models (several), not both")
    if not args.model and not models:
        raise UserError("missing --model or --models")
    models = [_resolve(m) for m in (models or [args.model])]
    # Models and judges load with this command's backend options; a judge naming a swept model reuses it.
    result = sweep(args.attack_name, config, args.out, grid=grid, seeds=seeds, models=models,
                   load_model=judge_loader(args, {}), batch_size=args.batch_size)
    rows, columns = table_rows(result)
    print_summary_table(f"sweep: {args.attack_name}, mean (std) over seeds {result['seeds']}", rows, columns)
    print(f"sweep directory: {args.out}  (table: {args.out}/sweep.json)")
    return 0


def _resolve(spec: str) -> str:
    if spec == "embedded":
        from robusteval.models.embedded import embedded_model_spec

        return embedded_model_spec()
    return spec
