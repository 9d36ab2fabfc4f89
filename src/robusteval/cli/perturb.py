"""``robusteval perturb``: a perturbed copy of a dataset (``robusteval.perturbations.pipeline.perturb_dataset``)."""

from __future__ import annotations

import argparse

from robusteval.cli.common import add_backend_options, add_command, build_backend, required_option
from robusteval.cli.configflags import add_config_arguments, config_from_args


def method_help() -> tuple[str, str]:
    """(--method help, description lines): every registered method with its languages and summary."""
    from robusteval.perturbations.registry import available_methods

    methods = sorted(available_methods(), key=lambda info: (info.name, info.language))
    by_name: dict[str, list[str]] = {}
    for info in methods:
        by_name.setdefault(info.name, []).append(info.language)
    short = ", ".join(f"{name} ({'/'.join(langs)})" for name, langs in by_name.items())
    lines = "\n".join(f"  {info.name} ({info.language}): {info.summary}" for info in methods)
    return short, lines


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.data.loaders import dataset_kinds
    from robusteval.perturbations.pipeline import PerturbConfig

    short, lines = method_help()
    parser = add_command(
        subparsers,
        "perturb",
        help="write a perturbed copy of a dataset (char/word/sentence-level noise)",
        description="Perturb the text fields of every example with one method and write robusteval's example "
        "format (JSON Lines: original ids and labels, the new text, and every edit with offsets). Read it back "
        "with --dataset examples, or give it to `robusteval robustness --sets NAME=FILE`. Resumable: progress is "
        "kept in FILE.jsonl.parts/ until the file is written. Digits, placeholders and label words are never "
        "changed.\n\nmethods (language):\n" + lines,
        example="robusteval perturb --dataset ocnli --data-file ocnli/dev.json \\\n"
        "    --method C-homophone --seed 1 --out ocnli-homophone.jsonl",
    )
    add_config_arguments(parser, PerturbConfig, skip=("method",), choices={"dataset": sorted(dataset_kinds())})
    required_option(parser, "--method", metavar="METHOD", help=short)
    add_backend_options(parser)  # for the models a method loads (translator, re-ranker)
    required_option(parser, "--out", metavar="FILE.jsonl", help="where to write the perturbed copy")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset

    config = config_from_args(PerturbConfig, args)
    result = perturb_dataset(config, args.out, load_model=lambda spec: build_backend(spec, args), device=args.device)
    if result["already_complete"]:
        print(f"{args.out} is already complete for these settings; nothing to do")
    print(f"{result['method']} ({result['language']}): {result['n_changed']}/{result['n']} examples changed, "
          f"{result['n_edits']} edits -> {args.out}")
    if "similarity" in result:
        from robusteval.perturbations.similarity import similarity_line

        print(similarity_line(result["similarity"]))
    return 0
