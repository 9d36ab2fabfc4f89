"""Wall time beside one busy process: torch's thread count fixed at 2 vs ``--threads auto`` (issue 36, item 4).

Each case is a fresh ``robusteval`` process on the tiny model (``models/tiny.py``): a clean pass (``eval``, the
quick-start's first part in small) and a token-level MATCHA attack, run idle and beside one busy single-threaded
process (``python -c "while True: pass"``), in the order A B A B (fixed, auto, fixed, auto) in each condition.
Prints every wall time with the 1-minute load average before it, and the busy/idle ratio of each setting.
Needs a quiet machine to mean anything: the "idle" condition is only idle when nothing else runs.

    python bench/threads_under_load.py                 # ~5-10 min on 2 cores
    python bench/threads_under_load.py --rounds 1 --questions 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY = [sys.executable, "-c", "while True: pass"]


def questions(path: Path, n: int) -> Path:
    rows = [{"question": f"Tom has {i} apples and buys {i + 1} more. How many apples does he have now?",
             "answer": str(2 * i + 1)} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def search_settings(folder: Path) -> Path:
    """MATCHA's search settings (``--config`` keys since their flags were deprecated)."""
    path = folder / "search.toml"
    path.write_text("steps = 3\nmin_correct = 0\n", encoding="utf-8")
    return path


def workloads(model: Path, data: Path, n: int) -> dict[str, list[str]]:
    common = ["--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", str(data), "--device", "cpu"]
    return {
        "clean pass": ["eval", *common, "--max-new-tokens", "48", "--batch-size", "8"],
        "token attack": ["attack", "matcha", *common, "--level", "token", "--attack-limit", str(n),
                         "--config", str(search_settings(data.parent)), "--max-new-tokens", "32",
                         "--target-answer", "clean", "--batch-size", "4"],
    }


def run_once(args: list[str], threads: str, out: Path) -> tuple[float, float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                           "ROBUSTEVAL_THREADS")}
    load = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "robusteval.cli.main", *args, "--threads", threads,
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=1800)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-2000:]}")
    line = next((x for x in done.stderr.splitlines() if x.startswith("torch threads:")), "torch threads: all cores")
    return wall, load, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="A B rounds per condition (2: A B A B)")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--fixed", default="2", help="the fixed setting compared with auto (2)")
    options = parser.parse_args()
    from robusteval.models.tiny import build_tiny_llama

    with tempfile.TemporaryDirectory(prefix="threads-bench-") as tmp:
        root = Path(tmp)
        model = build_tiny_llama(root / "model", seed=0)
        data = questions(root / "q.jsonl", options.questions)
        times: dict[tuple[str, str, str], list[float]] = {}
        print(f"cores: {len(os.sched_getaffinity(0))}; load before: {os.getloadavg()[0]:.2f}")
        for condition in ("idle", "busy"):
            busy = subprocess.Popen(BUSY) if condition == "busy" else None
            try:
                if busy is not None:
                    time.sleep(2)  # the busy process is running before the sample
                for round_ in range(options.rounds):
                    for threads in (options.fixed, "auto"):
                        for name, args in workloads(model, data, options.questions).items():
                            out = root / f"run-{condition}-{threads}-{round_}-{name.replace(' ', '-')}"
                            wall, load, line = run_once(args, threads, out)
                            times.setdefault((name, condition, threads), []).append(wall)
                            print(f"{condition:4} threads={threads:4} {name:12} {wall:7.1f} s  load {load:5.2f}  "
                                  f"{line}", flush=True)
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
        print()
        print(f"{'workload':12} {'threads':7} {'idle s':>8} {'busy s':>8} {'busy/idle':>9}   (medians)")
        for name in ("clean pass", "token attack"):
            for threads in (options.fixed, "auto"):
                idle = statistics.median(times[(name, "idle", threads)])
                loaded = statistics.median(times[(name, "busy", threads)])
                print(f"{name:12} {threads:7} {idle:8.1f} {loaded:8.1f} {loaded / idle:9.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
