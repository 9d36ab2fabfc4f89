"""``robusteval quickstart``: a tour of all four methods on the shipped model and the bundled samples
(``robusteval.tour``), one attacked example told in full, and one HTML report of it all."""

from __future__ import annotations

import argparse
import time
from typing import Any

from robusteval.cli.common import add_command, add_seed_option, add_threads_option, build_backend

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "quickstart"
HELP = "a tour of robusteval on the embedded model: MATCHA, VAR-MATH, RB-index, hard-label attack, report"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="With the shipped Gemma 3 270M and data written by this project: (1) the token-level MATCHA "
        "attack on 30 math word problems, judged by the arithmetic and grounding checkers, with one attacked example shown in "
        "full; (2) VAR-MATH variant scores on the example templates; (3) accuracy under English character noise "
        "on 20 yes/no questions and the RB-index; (4) a hard-label word-importance attack on some of them; then "
        "one self-contained HTML report. The GGUF is converted once into ~/.cache/robusteval; re-running on the "
        "same --out resumes and takes seconds.",
        example="robusteval quickstart\nrobusteval quickstart --attack-limit 10 --out my-quickstart",
    )
    parser.add_argument("--model", default=None, metavar="SPEC", help="another model instead of the embedded one")
    parser.add_argument("--out", default="robusteval-quickstart", metavar="DIR", help="run directory")
    # Measured on the shipped model (all 30 questions attacked, seed 0): 14 clean chains of thought already hold a
    # false equation; of the other 16, 4 are successes, the first on the 6th question. 8 shows one within a
    # first run of a few minutes on 2 cores.
    parser.add_argument("--attack-limit", type=int, default=8, help="MATCHA: the first N attackable questions")
    parser.add_argument("--min-correct", type=int, default=4,
                        help="MATCHA: below this many correct clean answers, keep the model's own answers")
    parser.add_argument("--max-new-tokens", type=int, default=80, help="MATCHA: generation budget per answer")
    # 1 = the paper's pure gradient pick: no extra candidate forwards (Gemma's 262k-token vocabulary makes every
    # scored position costly on a CPU).
    parser.add_argument("--n-candidates", type=int, default=1, help="MATCHA: tokens re-scored per position")
    add_seed_option(parser, "random seed of every part (derived per example)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-memory", default=None, metavar="SIZE",
                        help="the most memory to hold (4GB, 4GiB): attack batches are planned to fit it")
    add_threads_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval.attacks.base import get_attack
    from robusteval.attacks.matcha.results.terminal import format_matcha_example, pick_example
    from robusteval.evals.robustness.results.terminal import print_robustness_tables
    from robusteval.metrics.stats import wilson_interval
    from robusteval.models.embedded import embedded_model_spec
    from robusteval.peak import describe, peak_memory
    from robusteval.report.tables import (
        format_rate,
        print_exclusions,
        print_flags,
        print_summary_table,
    )
    from robusteval.runs import load_run
    from robusteval.tour import TourConfig, run_tour, tour_report

    began = time.perf_counter()
    spec = args.model or embedded_model_spec()
    backend = build_backend(spec, args)
    config = TourConfig(attack_limit=args.attack_limit, min_correct=args.min_correct,
                        max_new_tokens=args.max_new_tokens, n_candidates=args.n_candidates, seed=args.seed)
    results = run_tour(args.out, backend, config, batch_size=args.batch_size)

    matcha = results["matcha"]
    _, rows, columns = get_attack("matcha").table(matcha)
    print_summary_table(
        "1. MATCHA token-level attack, 30 math word problems (reasoning judge: arithmetic + grounding checkers); "
        "rates with their 95% intervals", rows, [*columns[:6], "target_answer", *columns[6:]])
    print_flags(matcha)
    print_exclusions(matcha)
    for note in matcha.get("notes", []):
        print(f"note: {note}")
    print("ACC over all questions; UR/SR/WR over every attacked question (n_attacked), each in one category whose "
          "counts sum to it (outcomes): UR: answer kept, reasoning fine; SR: answer kept, reasoning broken; WR: "
          "answer changed; unjudged: answer kept, neither checker found anything to check, so no verdict; clean "
          "wrong: answer kept, the clean reasoning was already wrong, so no success can be credited.")
    record, success = pick_example(load_run(matcha["run_dir"]).records("matcha_outcome"))
    if record is not None:
        print()
        print(format_matcha_example(record, success=success, where=f" (math question {record['id']})"))
        print()

    print_variants(results["variants"])
    robust = results["robustness"]
    print_robustness_tables(robust, label_mode=str(robust.get("label_mode")),
                            title="3. Perturbed benchmark: 20 yes/no questions under English character noise")
    words = results["wordimportance"]
    print_summary_table(
        "4. Hard-label word-importance attack (C-keyboard typos) on yes/no questions",
        [{"rate": rate, **values, "attack_success_rate": format_rate(
            values["attack_success_rate"],
            wilson_interval(values["n_success"], values["n_success"] + values["n_failed"]))}
         for rate, values in words["by_rate"].items()],
        ["rate", "n_success", "n_failed", "n_skipped", "attack_success_rate", "avg_queries"],
    )
    print_exclusions(words)
    print(f"report: {tour_report(args.out, results)}  (open it in a browser; one self-contained file)")
    # The wall time stays "(N s)" (.ci/run reads it); the peak memory of the whole tour follows it.
    print(f"run directory: {args.out}   ({time.perf_counter() - began:.0f} s)   {describe(peak_memory())}")
    return 0


def print_variants(variants: dict[str, Any]) -> None:
    """Part 2: the original problems' and the variants' scores, and the diagnosis line."""
    from robusteval.report.tables import format_rate, print_summary_table

    print_summary_table("2. VAR-MATH: the example templates' original problems and their symbolic variants "
                        "(strict: every instance right)",
                        [{**scores, "set": name, **{m: format_rate(scores.get(m), scores.get(f"{m}_ci95"))
                                                    for m in ("strict", "loose")}}
                         for name, scores in (("original", variants["original"]), ("variants", variants))],
                        ["set", "n_problems", "n_instances", "strict", "loose"])
    print(f"VAR-MATH diagnosis: {variants['diagnosis']['line']}")
