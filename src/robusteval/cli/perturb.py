"""``robusteval perturb``: a perturbed copy of a dataset (``robusteval.perturbations.pipeline.perturb_dataset``);
``perturb review`` and ``perturb labels``: a page to label sampled edits by hand, and the preservation rate the
labels measure (``robusteval.perturbations.review``)."""

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


#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "perturb"
HELP = "write a perturbed copy of a dataset (char/word/sentence-level noise)"


def register(subparsers: argparse._SubParsersAction) -> None:
    from robusteval.data.loaders import dataset_kinds
    from robusteval.perturbations.perturb_config import PerturbConfig

    short, lines = method_help()
    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
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
    # Optional: `robusteval perturb --method ...` perturbs, `robusteval perturb review|labels ...` reviews.
    sub = parser.add_subparsers(dest="perturb_command", metavar="{review,labels}", required=False)
    register_review(sub)


def register_review(sub: argparse._SubParsersAction) -> None:
    review = add_command(
        sub, "review", help="a page to label sampled edits by hand (same meaning / changed / ungrammatical)",
        description="Sample edits of perturbed sets (files written by `robusteval perturb`, or run directories "
        "of `robusteval robustness`, whose generated sets are stored), seeded and stratified by method (the "
        "same number from each method where it has enough), and write one self-contained HTML page to label "
        "them with the keyboard: 1 same meaning, 2 changed, 3 ungrammatical, j/k to move. Labels stay in the "
        "browser and are exported as a JSON Lines file; read it with `robusteval perturb labels`. With "
        "--store, edits the store has labelled are never sampled again.",
        example="robusteval perturb review ocnli-synonym.jsonl runs/rb-ocnli --n 50 --seed 1 \\\n"
        "    --store labels.jsonl --out review.html",
    )
    review.add_argument("sources", nargs="+", metavar="FILE|RUN_DIR",
                        help="perturb output files or robustness run directories")
    required_option(review, "--out", metavar="PAGE.html", help="where to write the page")
    review.add_argument("--n", type=int, default=50, help="edits to sample (spread evenly over the methods)")
    review.add_argument("--seed", type=int, default=0, help="sampling seed")
    review.add_argument("--store", metavar="LABELS.jsonl", help="labels store: its edits are not sampled again")
    review.set_defaults(func=run_review)

    labels = add_command(
        sub, "labels", help="read exported labels into a store and print the preservation rate per method",
        description="Add the labels a review page exported to the labels store (keyed by the edit: a hash of "
        "the method, the original and the perturbed text; an edit labelled again counts once, with its last "
        "label), then print per method the share of edits labelled same meaning, changed and ungrammatical, "
        "each with its n and Wilson 95% interval. Without --store, the files' labels alone are counted. With "
        "--run, each robustness run's sets get their preservation in summary.json (re-attaching the same "
        "labels changes nothing).",
        example="robusteval perturb labels review-3f2a9c1b0d4e.labels.jsonl --store labels.jsonl",
    )
    labels.add_argument("exports", nargs="*", metavar="EXPORT.jsonl", help="files the review page exported")
    labels.add_argument("--store", metavar="LABELS.jsonl", help="labels store to add them to (created if missing)")
    labels.add_argument("--run", action="append", default=[], metavar="RUN_DIR",
                        help="robustness run directory to attach the labels to (repeatable): each set's share of "
                        "edits judged same meaning is written into its summary.json beside its accuracy")
    labels.add_argument("--preserved-only", action="store_true",
                        help="with --run: also the accuracies and RB-index over the edits labelled same meaning "
                        "only (beside the headline RB-index)")
    labels.add_argument("--json", action="store_true", help="print the rates as JSON")
    labels.set_defaults(func=run_labels)


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
    from robusteval.perturbations.measured import notice_line

    notice = notice_line(result["measured_preservation"])
    if notice:
        print(notice)
    return 0


def run_review(args: argparse.Namespace) -> int:
    from robusteval.errors import UserError
    from robusteval.perturbations.review import LabelStore, load_items, sample_items, write_page

    if args.n < 1:
        raise UserError(f"--n must be at least 1, got {args.n}")
    items = [item for source in args.sources for item in load_items(source)]
    labelled = LabelStore(args.store).labelled_keys() if args.store else set()
    sample = sample_items(items, args.n, seed=args.seed, labelled=labelled)
    if not sample.items:
        raise UserError(f"no edit left to review in {', '.join(args.sources)}: "
                        + ("every one is labelled in the store" if sample.skipped_labelled else "nothing changed"))
    write_page(sample, args.out, sources=list(args.sources))
    shares = ", ".join(f"{method} {count}/{sample.available[method]}" for method, count in sample.per_method().items())
    skipped = f"; {sample.skipped_labelled} already labelled, left out" if args.store else ""
    print(f"{len(sample.items)} edits sampled ({shares} unlabelled){skipped} -> {args.out} "
          f"(sample {sample.sample_id})")
    return 0


def run_labels(args: argparse.Namespace) -> int:
    import json

    from robusteval.errors import UserError
    from robusteval.perturbations.review import LabelStore, preservation, preservation_lines, read_export

    if not args.exports and not args.store:
        raise UserError("give exported label files, --store, or both")
    if args.preserved_only and not args.run:
        raise UserError("--preserved-only needs --run RUN_DIR (the run whose RB-index it computes)")
    if args.run and not args.store and len(args.exports) != 1:
        raise UserError("--run: give --store LABELS.jsonl (the labels it attaches), or one exported file")
    exported = [label for path in args.exports for label in read_export(path)]
    if args.store:
        store = LabelStore(args.store)
        new, relabelled = store.add(exported)
        if args.exports:
            print(f"{new} new labels, {relabelled} relabelled (the last label of an edit counts) -> {args.store}")
        labels = store.all()
    else:
        labels = exported
    rates = preservation(labels)
    if args.json:
        print(json.dumps(rates, indent=2))
    else:
        print("\n".join(preservation_lines(rates)) or "no labels yet")
    for run_dir in args.run:
        from robusteval.evals.robustness.preservation import attach_labels
        from robusteval.evals.robustness.preservation import preservation_lines as run_lines

        summary = attach_labels(run_dir, args.store or args.exports[0],
                                preserved_only=True if args.preserved_only else None)
        print(f"{run_dir}: labels attached (summary: {run_dir}/summary.json)")
        for line in run_lines(summary) or ["no edit of this run is labelled"]:
            print(f"  {line}")
    return 0
