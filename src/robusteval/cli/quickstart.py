"""``robusteval quickstart``: the main job on the embedded default model and the bundled sample data."""

from __future__ import annotations

import argparse
import time
from importlib import resources

from robusteval.cli.common import build_backend
from robusteval.cli.main import add_command
from robusteval.data.loaders import load_dataset
from robusteval.evals.answer_first import accuracy_summary, answer_first_records
from robusteval.models.embedded import embedded_model_spec
from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars
from robusteval.report.tables import print_summary_table
from robusteval.store import RunStore, unit_key

SAMPLES = (("math", "math.jsonl", "number"), ("yesno", "yesno.jsonl", "yesno"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "quickstart",
        help="run the main job on the embedded default model and bundled samples",
        description="Answer-first evaluation of the shipped Gemma 3 270M model on 30 math word problems and 20 "
        "yes/no questions written by this project. The GGUF is converted once into ~/.cache/robusteval; later "
        "runs reuse it, and re-running on the same --out resumes.",
        example="robusteval quickstart",
    )
    parser.add_argument("--model", default=None, metavar="SPEC", help="another model instead of the embedded one")
    parser.add_argument("--out", default="robusteval-quickstart", metavar="DIR", help="run directory")
    parser.add_argument("--limit", type=int, default=None, help="use the first N examples of each sample set")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="generation budget per answer")
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
    rows = []
    for name, file_name, answer_type in SAMPLES:
        examples = load_dataset("jsonl", sample_path(file_name), limit=args.limit, answer_type=answer_type)
        prompt = AnswerFirstPrompt(load_exemplars(name))
        identity = {"command": "quickstart", "model": spec, "sample": name, "prefix_hash": unit_key(prompt.prefix),
                    "max_new_tokens": args.max_new_tokens}
        with RunStore.open(f"{args.out}/{name}", identity=identity, info={"limit": args.limit}) as store:
            records = answer_first_records(backend, store, examples, prompt, max_new_tokens=args.max_new_tokens,
                                           batch_size=args.batch_size, description=f"answer-first {name}")
            summary = {"model": backend.name, "dataset": f"sample:{name}", **accuracy_summary(records)}
            store.write_summary(summary)
        rows.append(summary)
    print_summary_table("robusteval quickstart: answer-first accuracy", rows, ["model", "dataset", "n", "n_correct", "acc"])
    print(f"run directory: {args.out}   ({time.perf_counter() - began:.0f} s)")
    return 0
