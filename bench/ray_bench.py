"""Ray executor speed-up: the same CPU-bound MATCHA token attack in process, on 1 Ray worker and on 2.

The target is the tiny trained Llama (built here, seed 0) attacked at the token level with the arithmetic
judge: a CPU-bound run (forward and backward passes of a small model, one torch thread per worker). Each
configuration gets a fresh run directory and computes the clean pass, the attack and the judge; the Ray
pools are started and the model loaded on their workers before the clock starts (start-up is timed apart),
and every configuration first attacks two examples with another seed, untimed (a warm-up).
Every run must store the same units (timings aside): the script exits 1 otherwise.

    python bench/ray_bench.py --examples 30                       # the packaged math sample
    python bench/ray_bench.py --data /work/shared/data/gsm8k/test.jsonl --dataset gsm8k --examples 40

The ideal on a 2-core machine is 2.0x for 2 workers over 1: the attack is split by examples and nothing is
shared between them. Ray's own processes (raylet, GCS, the driver committing results) take some CPU from
the same two cores, and the last examples leave one worker idle, so the measured figure is lower.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # in process too: the same one thread per computing process

import torch

import robusteval as rv
from robusteval.executors import use_executor
from robusteval.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers.runs import stored_units  # noqa: E402  (what the Ray tests compare: example ids, records untimed)

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def busy_seconds(out: Path) -> float:
    """Seconds the computing processes spent on the run's units (the stored per-unit times, summed)."""
    with RunStore.open_existing(out) as store:
        return sum(u["seconds"] or 0.0 for u in store.iter_units() if u["stage"] in ("matcha_clean", "matcha_attack"))


def timed_run(config: rv.MatchaRunConfig, model: Any, out: Path) -> tuple[float, float, dict[str, Any]]:
    """(wall seconds, 1-minute load average after, summary), after an untimed warm-up run of two examples
    (first calls pay for imports and allocations, in process and on every worker alike)."""
    warm = dataclasses.replace(config, data=dataclasses.replace(config.data, limit=2), seed=config.seed + 1)
    rv.attack_matcha(warm, model, out.with_name(out.name + "-warm-up"), batch_size=8)
    began = time.perf_counter()
    summary = rv.attack_matcha(config, model, out, batch_size=8)
    return time.perf_counter() - began, os.getloadavg()[0], summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=30)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--data", default=SAMPLE, help="a JSONL of questions (default: the packaged math sample)")
    parser.add_argument("--dataset", default="jsonl", help="its format (jsonl, gsm8k, ...)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--model", default=None, help="hf:PATH (default: the tiny trained Llama, built here)")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    from robusteval.executors.ray import RayExecutor

    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    spec = args.model
    if spec is None:
        from robusteval.models.tiny import build_tiny_llama

        spec = f"hf:{build_tiny_llama(work / 'model', seed=0, train_steps=200)}"
    data = rv.DataSpec(args.dataset, args.data, limit=args.examples,
                       answer_type="number" if args.dataset == "jsonl" else None)
    config = rv.MatchaRunConfig(data=data, level="token", target_answer="clean", steps=args.steps,
                                generation=rv.GenerationOptions(max_new_tokens=args.max_new_tokens),
                                judging=rv.JudgeOptions(judge="arith", semantic_judge="none"))
    print(f"machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, torch {torch.__version__}; load average before: {os.getloadavg()[0]:.2f}")

    rows: list[dict[str, Any]] = []
    wall, load, summary = timed_run(config, rv.load_model(spec), work / "inprocess")
    rows.append({"executor": "in process", "startup_s": 0.0, "wall_s": wall, "load_after": load,
                 "busy": busy_seconds(work / "inprocess") / wall})
    print(f"in process: {wall:.1f} s ({summary['n_attacked']} attacked of {summary['n']})", flush=True)
    for workers in (1, 2):
        began = time.perf_counter()
        pool = RayExecutor(workers=workers)
        with use_executor(pool, close=True):
            model = rv.load_model(spec)  # every worker loads it now, before the clock starts
            startup = time.perf_counter() - began
            wall, load, _ = timed_run(config, model, work / f"ray-{workers}")
        rows.append({"executor": f"ray, {workers} worker{'s' * (workers > 1)}", "startup_s": startup, "wall_s": wall,
                     "load_after": load, "busy": busy_seconds(work / f"ray-{workers}") / wall})
        print(f"ray {workers}: {wall:.1f} s (start-up and model load {startup:.1f} s)", flush=True)

    reference = stored_units(work / "inprocess")
    same = all(stored_units(work / f"ray-{w}") == reference for w in (1, 2))
    one, two = rows[1]["wall_s"], rows[2]["wall_s"]
    print()
    # busy: unit compute seconds per wall second, i.e. how many processes were computing on average.
    print("| executor | start-up + load (s) | wall (s) | s / attacked example | busy | load avg after |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['executor']} | {row['startup_s']:.1f} | {row['wall_s']:.1f} | "
              f"{row['wall_s'] / max(1, summary['n_attacked']):.2f} | {row['busy']:.2f} | {row['load_after']:.2f} |")
    print(f"\nspeed-up of 2 workers over 1: {one / two:.2f}x (ideal on 2 cores: 2.00x); "
          f"1 Ray worker vs in process: {one / rows[0]['wall_s']:.2f}x the time")
    print(f"stored units identical in all three runs: {'yes' if same else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "speedup": one / two, "identical": same,
                                               "n_attacked": summary["n_attacked"]}, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
