"""``robusteval quickstart``: the main job on the embedded default model and the bundled sample data.

The main job is MATCHA at the token level: answer-first accuracy on every sample question, then the attack
on the first few attackable ones, judged by the deterministic arithmetic checker, reported as ACC/UR/SR/WR.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources

from robusteval.cli.common import add_command, add_seed_option, build_backend, model_identity
from robusteval.models.embedded import embedded_model_spec
from robusteval.report.examples import format_matcha_example, pick_example
from robusteval.report.tables import print_summary_table

#: (name, file, answer type, (k, eps) as the paper's defaults for GSM8K). Only the math sample is attacked: its
#: reasoning judge, the arithmetic checker, cannot measure yes/no reasoning, and no LLM judge ships offline.
SAMPLES = (("math", "math.jsonl", "number", (0.25, 0.005)),)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "quickstart",
        help="run the main job (MATCHA token-level attack) on the embedded model and bundled samples",
        description="Runs the token-level MATCHA attack with the shipped Gemma 3 270M model on 30 math word "
        "problems written by this project: answer-first accuracy on all of them, then the attack on the first "
        "--attack-limit attackable ones, judged by the arithmetic checker, and one attacked example shown in "
        "full. The GGUF is converted once into ~/.cache/robusteval; re-running on the same --out resumes.",
        example="robusteval quickstart\nrobusteval quickstart --attack-limit 10 --out my-quickstart",
    )
    parser.add_argument("--model", default=None, metavar="SPEC", help="another model instead of the embedded one")
    parser.add_argument("--out", default="robusteval-quickstart", metavar="DIR", help="run directory")
    # Measured on the shipped model (all 30 questions attacked, seed 0): 14 clean chains of thought already hold a
    # false equation; of the other 16, 4 are successes, the first on the 6th question. 8 shows one within a
    # first run of about 4 minutes on 2 cores.
    parser.add_argument("--attack-limit", type=int, default=8, help="questions attacked (the first attackable ones)")
    parser.add_argument("--min-correct", type=int, default=4,
                        help="below this many correct clean answers, attack with --target-answer clean")
    parser.add_argument("--max-new-tokens", type=int, default=80, help="generation budget per answer")
    # 1 = the paper's pure gradient pick: no extra candidate forwards, which keeps the first run under
    # 10 minutes on 2 CPU cores (Gemma's 262k-token vocabulary makes every scored position costly).
    parser.add_argument("--n-candidates", type=int, default=1, help="replacement tokens re-scored per position")
    add_seed_option(parser, "random seed (insertions, derived per example)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.set_defaults(func=run, max_concurrency=8, api_key_env="OPENAI_API_KEY", request_timeout=60.0)


def sample_path(file_name: str) -> str:
    return str(resources.files("robusteval.data") / "samples" / file_name)


def run(args: argparse.Namespace) -> int:
    from robusteval.attacks.matcha.pipeline import (
        OUTCOME_STAGE,
        MatchaRunConfig,
        attack_matcha,
        matcha_identity,
    )
    from robusteval.data.spec import DataSpec
    from robusteval.lifecycle import open_run
    from robusteval.runs import load_run

    began = time.perf_counter()
    spec = args.model or embedded_model_spec()
    backend = None
    rows, notes, shown = [], [], []
    for name, file_name, answer_type, (topk, eps) in SAMPLES:
        config = MatchaRunConfig(
            data=DataSpec("jsonl", sample_path(file_name), answer_type=answer_type), exemplars=name,
            target_answer="auto", min_correct=args.min_correct, attack_limit=args.attack_limit,
            topk_ratio=topk, epsilon=eps, max_new_tokens=args.max_new_tokens, n_candidates=args.n_candidates,
            seed=args.seed, judge="arith", semantic_judge="none",
        )
        out = f"{args.out}/{name}"
        identity = matcha_identity(config, model_identity(spec, args), config.data.load())
        with open_run(out, identity, load=None if backend else lambda: build_backend(spec, args)) as (store, loaded):
            backend = backend or loaded
            summary = attack_matcha(config, backend, store, batch_size=args.batch_size)
        rows.append({**summary, "dataset": f"sample:{name}"})
        notes += [f"{name}: {note}" for note in summary.get("notes", [])]
        shown += [{**record, "sample": name} for record in load_run(out).records(OUTCOME_STAGE)]
    print_summary_table(
        "robusteval quickstart: MATCHA token-level attack (reasoning judge: arithmetic checker)",
        rows, ["model", "dataset", "n", "n_correct", "acc", "target_answer", "n_attacked", "n_clean_cot_wrong", "ur",
               "sr", "wr"],
    )
    for note in notes:
        print(f"note: {note}")
    print("ACC over all questions; UR/SR/WR over the attacked ones whose clean reasoning the judge accepts "
          "(n_clean_cot_wrong: attacked, but the clean reasoning was already wrong, so no success can be "
          "credited). UR: answer kept, reasoning fine; SR: answer kept, reasoning broken; WR: answer changed. "
          "The yes/no sample is not attacked here: the arithmetic checker cannot judge yes/no reasoning (use "
          "robusteval attack matcha --judge MODEL-SPEC).")
    record, success = pick_example(shown)
    if record is not None:
        print()
        print(format_matcha_example(record, success=success, where=f" ({record['sample']} question {record['id']})"))
        print()
    print(f"run directory: {args.out}   ({time.perf_counter() - began:.0f} s)")
    return 0
