"""``robusteval quickstart``: the main job on the embedded default model and the bundled sample data.

The main job is MATCHA at the token level: answer-first accuracy on every sample question, then the attack
on the first few attackable ones, judged by the deterministic arithmetic checker, reported as ACC/UR/SR/WR.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from importlib import resources

from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.attacks.matcha.token import edit_spans
from robusteval.cli.attack import judge_functions, memoised_loader, summarise
from robusteval.cli.common import build_backend
from robusteval.cli.main import add_command
from robusteval.data.loaders import load_dataset
from robusteval.lifecycle import open_run
from robusteval.models.embedded import embedded_model_spec
from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars
from robusteval.report.examples import format_matcha_example, pick_example
from robusteval.report.tables import print_summary_table
from robusteval.store import unit_key

SAMPLES = (("math", "math.jsonl", "number", "gsm8k"), ("yesno", "yesno.jsonl", "yesno", "strategyqa"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "quickstart",
        help="run the main job (MATCHA token-level attack) on the embedded model and bundled samples",
        description="Runs the token-level MATCHA attack with the shipped Gemma 3 270M model on 30 math word "
        "problems and 20 yes/no questions written by this project: answer-first accuracy on all of them, then "
        "the attack on the first --attack-limit attackable questions of each set, judged by the arithmetic "
        "checker. The GGUF is converted once into ~/.cache/robusteval; re-running on the same --out resumes.",
        example="robusteval quickstart\nrobusteval quickstart --attack-limit 10 --out my-quickstart",
    )
    parser.add_argument("--model", default=None, metavar="SPEC", help="another model instead of the embedded one")
    parser.add_argument("--out", default="robusteval-quickstart", metavar="DIR", help="run directory")
    parser.add_argument("--attack-limit", type=int, default=3, help="questions attacked per sample set")
    parser.add_argument("--min-correct", type=int, default=4,
                        help="below this many correct clean answers, attack with --target-answer clean")
    parser.add_argument("--max-new-tokens", type=int, default=80, help="generation budget per answer")
    # 1 = the paper's pure gradient pick: no extra candidate forwards, which keeps the first run under
    # 10 minutes on 2 CPU cores (Gemma's 262k-token vocabulary makes every scored position costly).
    parser.add_argument("--n-candidates", type=int, default=1, help="replacement tokens re-scored per position")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.set_defaults(func=run, max_concurrency=8, api_key_env="OPENAI_API_KEY", request_timeout=60.0)


def sample_path(file_name: str) -> str:
    return str(resources.files("robusteval.data") / "samples" / file_name)


def run(args: argparse.Namespace) -> int:
    began = time.perf_counter()
    spec = args.model or embedded_model_spec()
    backend = build_backend(spec, args)
    rows, notes, shown = [], [], []
    for name, file_name, answer_type, dataset_defaults in SAMPLES:
        examples = load_dataset("jsonl", sample_path(file_name), answer_type=answer_type)
        prompt = AnswerFirstPrompt(load_exemplars(name))
        config = MatchaConfig.for_dataset(dataset_defaults, max_new_tokens=args.max_new_tokens,
                                          n_candidates=args.n_candidates, seed=args.seed)
        identity = {"command": "quickstart", "model": spec, "sample": name, "prefix_hash": unit_key(prompt.prefix),
                    "config": {k: v for k, v in vars(config).items() if k != "target_answer"}}
        with open_run(f"{args.out}/{name}", identity, info={"attack_limit": args.attack_limit}) as (store, _):
            load = memoised_loader(args, {spec: backend})
            judge_reasoning, judge_semantic, judge_names = judge_functions(store, "arith", "none", load)
            judges = {"reasoning_judge": judge_reasoning, "semantic_judge": judge_semantic}
            clean = MatchaRunner(backend, store, prompt, config, batch_size=args.batch_size, **judges).clean_records(
                examples)
            n_correct = sum(1 for r in clean if r["correct"])
            if n_correct < args.min_correct:
                config = dataclasses.replace(config, target_answer="clean")
                notes.append(f"{name}: the model answered {n_correct}/{len(clean)} correctly, fewer than "
                             f"{args.min_correct}, so the attack keeps the model's own clean answer "
                             "(--target-answer clean) instead of the gold one")
            runner = MatchaRunner(backend, store, prompt, config, batch_size=args.batch_size, **judges)
            chosen = [r for r in clean if runner.attackable(r)[0]][: args.attack_limit]
            attacked = runner.judge(runner.attack_records(examples, chosen))
            summary = summarise(store, backend.name, f"sample:{name}", config, judge_names, clean, attacked, runner)
        rows.append({**summary, "target": config.target_answer})
        shown += [{**record, "sample": name} for record in attacked]
    print_summary_table(
        "robusteval quickstart: MATCHA token-level attack (reasoning judge: arithmetic checker)",
        rows, ["model", "dataset", "n", "n_correct", "acc", "target", "n_attacked", "ur", "sr", "wr"],
    )
    for note in notes:
        print(f"note: {note}")
    print("ACC over all questions; UR/SR/WR over the attacked ones (UR: answer kept, reasoning fine; "
          "SR: answer kept, reasoning wrong; WR: answer changed).")
    record, success = pick_example(shown)
    if record is not None:
        if "edits" not in record and record.get("perturbed_question_ids"):  # stored by an older version
            record["edits"] = edit_spans(backend.decode, record["perturbed_question_ids"],  # type: ignore[attr-defined]
                                         record["inserted_positions"], record["replaced_positions"])
        print()
        print(format_matcha_example(record, success=success, where=f" ({record['sample']} question {record['id']})"))
        print()
    print(f"run directory: {args.out}   ({time.perf_counter() - began:.0f} s)")
    return 0
