"""``robusteval prompt-robustness``: ``--mode perturb`` (default), accuracy with the clean prompt and with perturbed
copies of its instruction, system turn, answer-format line or exemplars, PDR and the RB-index
(``robusteval.prompt_robustness``); ``--mode search``, the adversarial instruction under a query budget
(``prompt_search``); ``--mode spread``, accuracy over equivalent prompts and formats (``prompt_spread``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from robusteval.cli.common import (
    add_command,
    add_model_options,
    add_out_option,
    judge_loader,
    model_identity,
    open_model_run,
    print_run_dir,
)
from robusteval.cli.configflags import _REQUIRED, add_config_arguments, config_from_args
from robusteval.data.spec import classification_datasets
from robusteval.errors import UserError

COMMAND = "prompt-robustness"
HELP = "accuracy under perturbed prompts (instruction, system, format line, exemplars): PDR and RB-index"
MODES = ("perturb", "search", "spread")


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.evals.prompt_robustness.config import (
        PromptRobustnessConfig,
        PromptSearchConfig,
        PromptSpreadConfig,
    )

    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Classify the examples with the clean prompt and with --prompts-per-method perturbed copies of "
        "one surface of it per method (--target: the instruction paragraph, the system turn, the answer-format line "
        "or the few-shot exemplars' text; the questions are never changed). Reports each prompt's accuracy, "
        "PDR = 1 - A(perturbed)/A(clean) (PromptBench, Zhu et al. 2023) per prompt and per method, and the "
        "RB-index over the perturbed prompts, each with n (questions) and a paired 95% interval. --mode search: the "
        "word-importance search over the instruction's words (--methods give the candidates) lowering the accuracy on "
        "--search-size seeded examples within --budget queries, the found prompt scored on the held-out rest. "
        "--mode spread: the template's prompt, --prompts-file's and --n-formats formats drawn from FormatSpread's "
        "grammar, on the same examples: accuracy per prompt, min/max/mean, spread and the worst case per example.",
        example="robusteval prompt-robustness --model hf:./tiny-llama --dataset jsonl \\\n"
        "    --data-file yesno.jsonl --answer-type label --target instruction \\\n"
        "    --methods C-keyboard,C-swap,W-synonym --prompts-per-method 3 --out runs/prompt-rb",
    )
    add_model_options(parser)
    parser.add_argument("--mode", choices=MODES, default="perturb",
                        help="perturb: perturbed prompts, PDR and RB-index; search: adversarial instruction under a "
                        "query budget; spread: equivalent prompts and formats")
    add_config_arguments(parser, PromptRobustnessConfig, choices={"dataset": classification_datasets()})
    # --methods is required by perturb and search only: checked in run() (before the model loads).
    parser.get_default(_REQUIRED).remove(("methods", "--methods"))
    common = tuple(field for field in PromptRobustnessConfig.__dataclass_fields__)
    add_config_arguments(parser, PromptSearchConfig, skip=common, group="search (--mode search)")
    add_config_arguments(parser, PromptSpreadConfig, skip=common, group="spread (--mode spread)")
    add_out_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig
    from robusteval.evals.prompt_robustness.pipeline import (
        prompt_robustness,
        prompt_robustness_identity,
        prompt_robustness_info,
    )

    if args.mode != "perturb" and args.target != "instruction":
        raise UserError(f"--target: --mode {args.mode} works on the instruction only")
    if args.mode in ("perturb", "search") and not args.methods:
        raise UserError(f"--methods: required with --mode {args.mode}")
    if args.mode == "search":
        return run_search(args)
    if args.mode == "spread":
        return run_spread(args)
    config = config_from_args(PromptRobustnessConfig, args)
    examples = config.data.load()  # bad data, template surface and methods fail here, before the model loads
    identity = prompt_robustness_identity(config, model_identity(args.model, args), examples)
    info = prompt_robustness_info(config, args.batch_size)
    with open_model_run(args, identity, info) as (store, backend):
        summary = prompt_robustness(config, backend, store, load_model=judge_loader(args, {args.model: backend}),
                                    batch_size=args.batch_size)
    print_prompt_table(summary)
    print_run_dir(args.out)
    return 0


def print_prompt_table(summary: Mapping[str, Any]) -> None:
    """One table: the clean prompt, each perturbed prompt and each method over its prompts, every accuracy and PDR
    with n and its interval; then the prompts left out and the RB-index."""
    from robusteval.metrics.formatting import format_rate
    from robusteval.report.tables import print_summary_table

    n = summary["n"]
    unparsed = summary.get("n_unparsed") or {}
    rows: list[dict[str, Any]] = [{"prompt": "clean", "acc": format_rate(summary["acc_clean"],
                                                                         summary["acc_clean_ci95"], n=n),
                                   "unparsed": unparsed.get("clean")}]
    for method, block in summary["methods"].items():
        for name in block["prompts"]:
            entry = summary["prompts"][name]
            rows.append({"prompt": name, "acc": format_rate(entry["acc"], entry["acc_ci95"], n=n),
                         "PDR": format_rate(entry["pdr"], entry["pdr_ci95"], n=n) if entry["changed"] else "unchanged",
                         "unparsed": unparsed.get(name)})
        rows.append({"prompt": f"{method} (all {len(block['prompts'])})",
                     "acc": "-" if block["acc_mean"] is None else f"mean {block['acc_mean']:.3f}",
                     "PDR": format_rate(block["pdr"], block["pdr_ci95"], n=n)})
    columns = ["prompt", "acc", "PDR"]
    soft = summary["label_mode"] == "soft"
    note = "soft labels" if soft else "hard labels; unparsed: labels that could not be read, counted wrong"
    print_summary_table(f"accuracy under perturbed prompts (target {summary['target']}, {note}; n={n} questions, "
                        "each asked with every prompt; PDR = 1 - A(prompt)/A(clean))", rows,
                        columns if soft else [*columns, "unparsed"])
    for name in summary.get("prompts_excluded") or []:
        print(f"{name}: left out of the PDRs and the RB-index ({summary['prompts'][name]['excluded_reason']})")
    rb = summary["rb_index"]
    if rb is None:
        why = "no perturbed prompt changed the prompt" if not summary.get("T") else "clean accuracy is 0"
        print(f"RB-index: undefined ({why})")
    else:
        print(f"RB-index over {summary['T']} perturbed prompt(s): "
              f"{format_rate(rb, summary.get('rb_index_ci95'), digits=4, n=n)}  (lower is more robust)")


def run_search(args: argparse.Namespace) -> int:
    from robusteval.evals.prompt_robustness.config import PromptSearchConfig
    from robusteval.evals.prompt_robustness.search_pipeline import prompt_search, prompt_search_identity

    return _run_mode(args, PromptSearchConfig, prompt_search_identity, prompt_search, print_search_table)


def run_spread(args: argparse.Namespace) -> int:
    from robusteval.evals.prompt_robustness.config import PromptSpreadConfig
    from robusteval.evals.prompt_robustness.spread_pipeline import prompt_spread, prompt_spread_identity

    return _run_mode(args, PromptSpreadConfig, prompt_spread_identity, prompt_spread, print_spread_table)


def _run_mode(
    args: argparse.Namespace,
    config_type: type[Any],
    identity_of: Callable[..., dict[str, Any]],
    pipeline: Callable[..., Mapping[str, Any]],
    print_table: Callable[[Mapping[str, Any]], None],
) -> int:
    """``--mode search`` / ``--mode spread``: the mode's config from the flags, its data loaded (bad data fails
    before the model loads), its pipeline run in ``--out``, its table printed."""
    config = config_from_args(config_type, args)
    examples = config.data.load()
    identity = identity_of(config, model_identity(args.model, args), examples)
    info = {"limit": config.data.limit, "batch_size": args.batch_size}
    with open_model_run(args, identity, info) as (store, backend):
        summary = pipeline(config, backend, store, batch_size=args.batch_size)
    print_table(summary)
    print_run_dir(args.out)
    return 0


def print_search_table(summary: Mapping[str, Any]) -> None:
    """The clean and the found prompt on the held-out examples (accuracy, PDR, n, intervals), the edits and the
    queries spent."""
    from robusteval.metrics.formatting import format_rate
    from robusteval.report.tables import print_summary_table

    held = summary["held_out"]
    n = held["n"]
    found = held["prompts"]["found"]
    rows = [{"prompt": "clean", "held-out acc": format_rate(held["acc_clean"], held["acc_clean_ci95"], n=n),
             "search acc": summary["search_acc_clean"]},
            {"prompt": "found", "held-out acc": format_rate(found["acc"], found["acc_ci95"], n=n),
             "PDR": format_rate(found["pdr"], found["pdr_ci95"], n=n) if found["changed"] else "unchanged",
             "search acc": summary["search_acc_found"]}]
    print_summary_table(f"adversarial prompt search ({summary['label_mode']} labels; searched on "
                        f"{summary['search_size']} examples, held out n={n}; "
                        f"{summary['queries']}/{summary['budget']} queries)", rows,
                        ["prompt", "held-out acc", "PDR", "search acc"])
    print(f"clean instruction: {summary['clean_instruction']}")
    print(f"found instruction: {summary['found_instruction']}")
    edits = ", ".join(f"{e.get('original')!r}->{e.get('replacement')!r}" for e in summary["edits"]) or "none"
    print(f"edits: {edits}  (stopped: {summary['stop_reason']})")


def print_spread_table(summary: Mapping[str, Any]) -> None:
    """Each prompt's accuracy (n, Wilson interval), then min/max/mean, the spread with its paired interval and
    the worst case per example."""
    from robusteval.metrics.formatting import format_rate
    from robusteval.report.tables import print_summary_table

    n = summary["n"]
    rows = []
    for name, entry in summary["prompts"].items():
        fmt = entry.get("format") or {}
        what = entry.get("instruction") or ", ".join(f"{k}={v!r}" for k, v in fmt.items() if v not in (None, "as-is"))
        rows.append({"prompt": name, "acc": format_rate(entry["acc"], entry["acc_ci95"], n=n),
                     "what": (what or "the template's own")[:60]})
    print_summary_table(f"prompt spread ({summary['label_mode']} labels; n={n} examples, each asked with every "
                        "prompt)", rows, ["prompt", "acc", "what"])
    print(f"min {summary['min']:.3f} ({summary['argmin']}), max {summary['max']:.3f} ({summary['argmax']}), "
          f"mean {summary['mean']:.3f} over {summary['n_prompts']} prompts")
    print(f"spread (max - min): {format_rate(summary['spread'], summary['spread_ci95'], n=n)}")
    print(f"worst case (every prompt right): {format_rate(summary['worst_case_acc'], summary['worst_case_acc_ci95'], n=n)}"
          f"  best case (some prompt right): {format_rate(summary['best_case_acc'], summary['best_case_acc_ci95'], n=n)}")
