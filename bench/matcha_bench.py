"""MATCHA speed benchmark: the normal path against a naive baseline, same examples, same seed, one process.

normal  prefix KV cache on, batched clean pass, early stop at the stop string, candidates scored in batches
naive   no prefix KV cache (the exemplar prefix is re-encoded by every forward), batch size 1, every
        generation runs the full --max-new-tokens and is cut at the stop string afterwards, candidates
        scored one at a time

Both paths run the clean pass, the attack and the deterministic arithmetic reasoning judge, each into a
fresh run store, on their own copy of the model (loading is timed apart and not counted). The outcomes
must be identical; the figure of merit is seconds per attacked example and the ratio naive / normal.

    python bench/matcha_bench.py --tiny --examples 3 --max-new-tokens 64      # smoke, ~1 min
    python bench/matcha_bench.py --examples 2 --max-new-tokens 128            # embedded Gemma 3 270M
    python bench/matcha_bench.py --model hf:./my-model --level embedding

Exit status 1 when the token-level outcomes differ between the paths. At the embedding level sign(grad)
can flip on float rounding between cached and uncached forwards, so agreement is reported, not enforced.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from robusteval.attacks.matcha.pipeline import matcha_judges
from robusteval.attacks.matcha.run import DATASET_DEFAULTS, MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.models import Backend, load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import STOP_STRINGS, AnswerFirstPrompt, load_exemplars
from robusteval.store import RunStore

COMPARED = ("perturbed_question_ids", "perturbed_completion", "answer_kept", "outcome")


@dataclass
class PathResult:
    name: str
    load_s: float
    clean_s: float = 0.0
    attack_s: float = 0.0  # attack_records + judge
    judge_s: float = 0.0
    clean_cpu: float = 0.0  # process CPU seconds (all threads): steadier than wall time on a shared machine
    attack_cpu: float = 0.0
    clean: list[dict[str, Any]] = field(default_factory=list)
    attacked: list[dict[str, Any]] = field(default_factory=list)
    load_before: float = 0.0
    load_after: float = 0.0

    @property
    def total_s(self) -> float:
        return self.clean_s + self.attack_s

    @property
    def total_cpu(self) -> float:
        return self.clean_cpu + self.attack_cpu

    @property
    def n_attacked(self) -> int:
        return len(self.attacked)

    def per_attacked(self, seconds: float) -> float:
        return seconds / self.n_attacked if self.n_attacked else float("nan")

    def inner(self, part: str) -> float:
        """Sum over attacked examples of one of attack_one's own timers (reference, optimise, generate)."""
        return sum(r.get("seconds", {}).get(part, 0.0) for r in self.attacked)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default=None, metavar="hf:DIR",
                       help="model spec (default: the embedded Gemma 3 270M)")
    which.add_argument("--tiny", action="store_true",
                       help="build a tiny trained Llama (200 steps) in a temp dir and use it (smoke path)")
    parser.add_argument("--examples", type=int, default=3, help="first N examples of the dataset (3)")
    parser.add_argument("--dataset-file", default=None, metavar="PATH",
                        help="jsonl with id/question/answer (default: the package sample math.jsonl)")
    parser.add_argument("--answer-type", default="number", choices=["number", "yesno", "math", "text", "label"])
    parser.add_argument("--paper-defaults", default="gsm8k", choices=sorted(DATASET_DEFAULTS),
                        help="which dataset's paper defaults for k and eps (gsm8k)")
    parser.add_argument("--level", choices=["token", "embedding"], default="token")
    parser.add_argument("--variant", default="full")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="as the paper (256)")
    parser.add_argument("--steps", type=int, default=None, help="optimisation steps (5)")
    parser.add_argument("--n-candidates", type=int, default=None, help="candidates re-scored per position (8)")
    parser.add_argument("--target-answer", choices=["gold", "clean"], default="clean")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8, help="normal path batch size (8); naive uses 1")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--order", choices=["normal-first", "naive-first"], default="normal-first",
                        help="which path runs first (both are warmed up before timing)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="write the two run stores under DIR instead of a temp dir")
    return parser.parse_args(argv)


def default_dataset() -> Path:
    return Path(str(resources.files("robusteval.data") / "samples" / "math.jsonl"))


def resolve_model(args: argparse.Namespace, workdir: Path) -> tuple[str, str]:
    """(spec, description); --tiny builds the model, the default converts the embedded GGUF once."""
    if args.tiny:
        from robusteval.models.tiny import build_tiny_llama

        began = time.perf_counter()
        path = build_tiny_llama(workdir / "tiny-llama", train_steps=200)
        print(f"built tiny llama in {time.perf_counter() - began:.1f} s: {path}", flush=True)
        return f"hf:{path}", "tiny Llama (2 layers, hidden 64, vocab 600, 200 training steps)"
    if args.model:
        return args.model, args.model
    from robusteval.models.embedded import embedded_model_spec

    return embedded_model_spec(), "embedded Gemma 3 270M (GGUF Q4_K_M, dequantised to fp32)"


def load(spec: str, args: argparse.Namespace, *, naive: bool) -> tuple[Backend, float]:
    began = time.perf_counter()
    backend = load_backend(spec, device=args.device, dtype=args.dtype,
                           batch_size=1 if naive else args.batch_size, prefix_cache=not naive)
    return backend, time.perf_counter() - began


def warm_up(backend: Any) -> None:
    """One tiny generation and one backward pass, on a prefix the benchmark never uses (so no cache hit)."""
    prefix = backend.bos_ids + backend.encode("Warm up.")
    suffix = backend.encode(" Q: 1 + 1?\nA:")
    backend.decode_batch(prefix, [suffix], max_new_tokens=2)
    embeds = backend.embed(torch.tensor([suffix])).detach().requires_grad_(True)
    backend.forward(prefix, embeds, logits_to_keep=2).float().sum().backward()


class NaiveMatchaRunner(MatchaRunner):
    """The baseline: batch size 1, no early stop (full ``max_new_tokens`` generations, cut at the stop string
    afterwards so outcomes are identical), candidate losses one forward each. The prefix KV cache is the
    backend's switch (``prefix_cache=False``)."""

    candidate_chunk = 1

    def _decode(self, suffixes: Any) -> list[Any]:
        limit = self.config.max_new_tokens
        rows = (self.backend.decode_batch(self.prefix_ids, suffixes, max_new_tokens=limit)
                if isinstance(suffixes, torch.Tensor) else
                [self.backend.decode_batch(self.prefix_ids, [s], max_new_tokens=limit)[0] for s in suffixes])
        return [self.backend.cut_at_stop(row, STOP_STRINGS) for row in rows]


def no_model_judges(spec: str) -> Backend:
    raise RuntimeError(f"the benchmark's judges are arith/none; nothing should load {spec}")


def run_path(name: str, backend: Any, load_s: float, examples: list[Any], prompt: AnswerFirstPrompt,
             config: MatchaConfig, args: argparse.Namespace, root: Path) -> PathResult:
    naive = name == "naive"
    result = PathResult(name, load_s, load_before=os.getloadavg()[0])
    with RunStore.open(root / name, identity={"bench": name, "config": vars(config)}) as store:
        judge_reasoning, judge_semantic, _ = matcha_judges(store, "arith", "none", no_model_judges)
        runner_type = NaiveMatchaRunner if naive else MatchaRunner
        runner = runner_type(backend, store, prompt, config, reasoning_judge=judge_reasoning,
                             semantic_judge=judge_semantic, batch_size=1 if naive else args.batch_size)
        began, cpu = time.perf_counter(), time.process_time()
        result.clean = runner.clean_records(examples)
        result.clean_s, result.clean_cpu = time.perf_counter() - began, time.process_time() - cpu
        began, cpu = time.perf_counter(), time.process_time()
        records = runner.attack_records(examples, result.clean)
        judged_at = time.perf_counter()
        result.attacked = runner.judge(records)
        result.judge_s = time.perf_counter() - judged_at
        result.attack_s, result.attack_cpu = time.perf_counter() - began, time.process_time() - cpu
    result.load_after = os.getloadavg()[0]
    return result


def compare(normal: PathResult, naive: PathResult) -> tuple[int, int, list[str]]:
    """(agreeing examples, examples compared, differences) over clean completions and attack outcomes."""
    problems: list[str] = []
    clean_a = {r["id"]: r["completion"] for r in normal.clean}
    clean_b = {r["id"]: r["completion"] for r in naive.clean}
    for key in sorted(clean_a):
        if clean_a[key] != clean_b.get(key):
            problems.append(f"{key}: clean completion differs")
    attacked_a = {r["id"]: r for r in normal.attacked}
    attacked_b = {r["id"]: r for r in naive.attacked}
    if set(attacked_a) != set(attacked_b):
        problems.append(f"attacked examples differ: {sorted(attacked_a)} vs {sorted(attacked_b)}")
    ids = sorted(set(attacked_a) | set(attacked_b))
    agree = 0
    for key in ids:
        a, b = attacked_a.get(key, {}), attacked_b.get(key, {})
        fields = [f for f in COMPARED if a.get(f) != b.get(f)]
        if fields or not a or not b or clean_a.get(key) != clean_b.get(key):
            problems.append(f"{key}: {', '.join(fields) or 'attacked on one path only'} differ")
        else:
            agree += 1
    return agree, len(ids), problems


def fmt(seconds: float) -> str:
    return "n/a" if seconds != seconds else f"{seconds:.2f}"  # NaN when nothing was attacked


def report(normal: PathResult, naive: PathResult) -> None:
    header = f"{'path':<7} {'attacked':>8} {'clean s':>9} {'attack s':>9} {'total s':>9} {'s/attacked':>11} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    base = normal.per_attacked(normal.total_s)
    for res in (normal, naive):
        per = res.per_attacked(res.total_s)
        ratio = per / base if base == base and base > 0 else float("nan")
        print(f"{res.name:<7} {res.n_attacked:>8} {res.clean_s:>9.2f} {res.attack_s:>9.2f} {res.total_s:>9.2f} "
              f"{fmt(per):>11} {fmt(ratio) + 'x':>7}")
    print()
    print("phases (s)                normal      naive   naive/normal")
    rows = [
        ("clean pass", normal.clean_s, naive.clean_s),
        ("attack (incl. judge)", normal.attack_s, naive.attack_s),
        ("  reference logits", normal.inner("reference"), naive.inner("reference")),
        ("  optimise", normal.inner("optimise"), naive.inner("optimise")),
        ("  perturbed generation", normal.inner("generate"), naive.inner("generate")),
        ("  arith judge", normal.judge_s, naive.judge_s),
        ("attack per attacked ex.", normal.per_attacked(normal.attack_s), naive.per_attacked(naive.attack_s)),
        ("total per attacked ex.", normal.per_attacked(normal.total_s), naive.per_attacked(naive.total_s)),
        ("model load (not counted)", normal.load_s, naive.load_s),
        ("CPU s, clean pass", normal.clean_cpu, naive.clean_cpu),
        ("CPU s, attack", normal.attack_cpu, naive.attack_cpu),
        ("CPU s per attacked ex.", normal.per_attacked(normal.total_cpu), naive.per_attacked(naive.total_cpu)),
    ]
    for label, a, b in rows:
        ratio = b / a if a > 0 and a == a and b == b else float("nan")
        print(f"{label:<24} {fmt(a):>8} {fmt(b):>10} {fmt(ratio) + 'x':>14}")
    print("(CPU s = process CPU time over all threads; with --threads 1 it is the least load-sensitive figure)")
    print(f"load average (1 min) before/after: normal {normal.load_before:.2f}/{normal.load_after:.2f}, "
          f"naive {naive.load_before:.2f}/{naive.load_after:.2f}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    config = MatchaConfig.for_dataset(
        args.paper_defaults, level=args.level, variant=args.variant, steps=args.steps,
        n_candidates=args.n_candidates, generation=GenerationOptions(max_new_tokens=args.max_new_tokens),
        target_answer=args.target_answer,
        seed=args.seed,
    )
    config.validate()
    data_file = Path(args.dataset_file) if args.dataset_file else default_dataset()
    examples = load_dataset("jsonl", data_file, limit=args.examples, answer_type=args.answer_type)
    prompt = AnswerFirstPrompt(load_exemplars("yesno" if args.answer_type == "yesno" else "math"))

    with tempfile.TemporaryDirectory(prefix="matcha-bench-") as tmp:
        workdir = Path(tmp)
        spec, described = resolve_model(args, workdir)
        root = Path(args.keep) if args.keep else workdir / "runs"
        root.mkdir(parents=True, exist_ok=True)
        for name in ("normal", "naive"):
            if (root / name).exists():
                print(f"{root / name} exists: the benchmark needs fresh run stores", file=sys.stderr)
                return 2
        print(f"model: {described} ({spec})")
        print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads, device {args.device}; load average {os.getloadavg()}")
        print(f"data: {data_file} (first {len(examples)} examples)")
        print(f"config: {vars(config)}; normal batch size {args.batch_size}", flush=True)

        backends = {name: load(spec, args, naive=name == "naive") for name in ("normal", "naive")}
        for backend, _ in backends.values():
            warm_up(backend)
        order = ["normal", "naive"] if args.order == "normal-first" else ["naive", "normal"]
        results: dict[str, PathResult] = {}
        for name in order:
            print(f"\n== {name} path", flush=True)
            backend, load_s = backends[name]
            results[name] = run_path(name, backend, load_s, examples, prompt, config, args, root)
            res = results[name]
            print(f"{name}: {res.n_attacked} attacked; clean {res.clean_s:.2f} s, attack {res.attack_s:.2f} s "
                  f"(reference {res.inner('reference'):.2f}, optimise {res.inner('optimise'):.2f}, "
                  f"generate {res.inner('generate'):.2f}, judge {res.judge_s:.2f}), total {res.total_s:.2f} s; "
                  f"load average {res.load_before:.2f} -> {res.load_after:.2f}", flush=True)

    normal, naive = results["normal"], results["naive"]
    backend = backends["normal"][0]
    prefix_len = len(backend.bos_ids + backend.encode(prompt.prefix))
    conts = [len(r["continuation_ids"]) for r in normal.clean if r["id"] in {a["id"] for a in normal.attacked}]
    print(f"\nworkload: exemplar prefix {prefix_len} tokens, vocabulary {len(backend.tokenizer)}, "
          f"teacher-forced continuation (m) of the attacked examples: {conts} tokens")
    print()
    report(normal, naive)
    agree, compared, problems = compare(normal, naive)
    print()
    for problem in problems:
        print(f"  difference: {problem}")
    identical = not problems
    print(f"outcome agreement: {agree}/{compared} attacked examples")
    print(f"outcomes identical: {'yes' if identical else 'no'}")
    if normal.n_attacked == 0:
        print("warning: no example was attackable; the per-example figures are undefined", file=sys.stderr)
    if not identical and config.level == "token":
        return 1
    if not identical:
        print("(embedding level: sign(grad) can flip on float rounding between cached and uncached forwards; "
              "reported, not enforced)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
