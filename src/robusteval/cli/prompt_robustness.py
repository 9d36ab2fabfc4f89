"""``robusteval prompt-robustness``: accuracy with the clean prompt and with perturbed copies of its instruction,
system turn, answer-format line or exemplars; PDR and the RB-index (``robusteval.prompt_robustness``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from robusteval.cli.common import (
    add_command,
    add_model_options,
    build_backend,
    judge_loader,
    model_identity,
    required_option,
)
from robusteval.cli.configflags import add_config_arguments, config_from_args
from robusteval.data.spec import classification_datasets


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig

    parser = add_command(
        subparsers,
        "prompt-robustness",
        help="accuracy under perturbed prompts (instruction, system, format line, exemplars): PDR and RB-index",
        description="Classify the examples with the clean prompt and with --prompts-per-method perturbed copies of "
        "one surface of it per method (--target: the instruction paragraph, the system turn, the answer-format line "
        "or the few-shot exemplars' text; the questions are never changed). Reports each prompt's accuracy, "
        "PDR = 1 - A(perturbed)/A(clean) (PromptBench, Zhu et al. 2023) per prompt and per method, and the "
        "RB-index over the perturbed prompts, each with n (questions) and a paired 95% interval.",
        example="robusteval prompt-robustness --model hf:./tiny-llama --dataset jsonl \\\n"
        "    --data-file yesno.jsonl --answer-type label --target instruction \\\n"
        "    --methods C-keyboard,C-swap,W-synonym --prompts-per-method 3 --out runs/prompt-rb",
    )
    add_model_options(parser)
    add_config_arguments(parser, PromptRobustnessConfig, choices={"dataset": classification_datasets()})
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig
    from robusteval.evals.prompt_robustness.pipeline import (
        prompt_robustness,
        prompt_robustness_identity,
        prompt_robustness_info,
    )
    from robusteval.lifecycle import open_run

    config = config_from_args(PromptRobustnessConfig, args)
    examples = config.data.load()  # bad data, template surface and methods fail here, before the model loads
    identity = prompt_robustness_identity(config, model_identity(args.model, args), examples)
    info = prompt_robustness_info(config, args.batch_size)
    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        assert backend is not None  # open_run yields what load() returned
        summary = prompt_robustness(config, backend, store, load_model=judge_loader(args, {args.model: backend}),
                                    batch_size=args.batch_size)
    print_prompt_table(summary)
    print(f"run directory: {args.out}  (summary: {args.out}/summary.json)")
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
