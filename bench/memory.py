"""Peak memory of the quick-start's MATCHA part and of a token attack, on the embedded or a tiny model.

Runs one part in this process, samples its resident memory every 0.1 s (with what the attack was doing at the
peak, from the progress phase) and reports the peak from ``getrusage`` (the kernel's own high-water mark), the
resident memory after the model loaded, the wall time and the load average before and after. Whichever
robusteval ``PYTHONPATH`` names is measured, so the same script gives the before and after figures:

    PYTHONPATH=/work/main/src python bench/memory.py --part quickstart-matcha     # before (old tree)
    PYTHONPATH=src python bench/memory.py --part quickstart-matcha                # after
    PYTHONPATH=src python bench/memory.py --tiny --part token --limit 6 --examples 4 --max-new-tokens 32  # ~1 min

``quickstart-matcha`` is exactly the quick-start's part 1 (``robusteval.tour``'s MATCHA settings: 30 math
questions, 8 attacked in lock-step, 80 new tokens, one candidate). ``token`` is a token-level MATCHA attack at
the same settings on ``--examples`` questions in lock-step batches of ``--batch-size``. Peak memory figures
hold under load; wall times do not (a busy machine stretches them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def rss_bytes() -> int:
    """This process's resident memory now (/proc/self/statm). The script brings its own helpers (not
    robusteval.peak / memory_plan) so that it runs against an older tree too, for the before figures."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Sampler:
    """Samples resident memory in a thread; remembers the peak and the progress phase at the peak."""

    def __init__(self, every: float = 0.1, limit: int | None = None) -> None:
        self.every, self.peak, self.phase, self.limit = every, 0, "", limit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from robusteval import progress

        while not self._stop.wait(self.every):
            now = rss_bytes()
            if now > self.peak:
                shown = [p for p in progress._SHOWN if p.total > 0]
                self.peak = now
                self.phase = (f"{shown[-1].description}: {shown[-1].phase}" if shown else "")
            if self.limit is not None and now > self.limit:
                # A shared machine: stop here rather than push other processes out of memory.
                print(f"stopped: resident memory {_gib(now)} passed --rss-limit {_gib(self.limit)} during "
                      f"{self.phase or '-'}", file=sys.stderr, flush=True)
                os._exit(3)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("quickstart-matcha", "token"), default="quickstart-matcha")
    parser.add_argument("--model", default=None, help="a model spec (default: the embedded Gemma 3 270M)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random Llama built in a temporary directory")
    parser.add_argument("--train-steps", type=int, default=200,
                        help="--tiny: steps it is trained on the answer-first exemplars (0: random, attacks nothing)")
    parser.add_argument("--examples", type=int, default=8, help="token: questions attacked")
    parser.add_argument("--limit", type=int, default=None, help="token: the first N questions (default: all 30)")
    parser.add_argument("--batch-size", type=int, default=8, help="lock-step batch and generation batch")
    parser.add_argument("--max-new-tokens", type=int, default=80)
    parser.add_argument("--max-memory", default=None, help="passed to the backend when this tree knows it")
    parser.add_argument("--rss-limit", type=float, default=8.0,
                        help="GiB: stop (exit 3) when resident memory passes it (0: no limit)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    import robusteval
    from robusteval.models import load_backend

    tmp = Path(tempfile.mkdtemp(prefix="robusteval-memory-"))
    if args.tiny:
        from robusteval.models.tiny import build_tiny_llama

        spec = f"hf:{build_tiny_llama(tmp / 'tiny', seed=0, train_steps=args.train_steps)}"
    else:
        from robusteval.models.embedded import embedded_model_spec

        spec = args.model or embedded_model_spec()
    options: dict[str, Any] = {"batch_size": args.batch_size}
    if args.max_memory:
        options["max_memory"] = args.max_memory
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    backend = load_backend(spec, **options)
    loaded_rss = rss_bytes()
    loaded_s = time.perf_counter() - began
    with Sampler(limit=int(args.rss_limit * 2**30) or None) as sampler:
        start = time.perf_counter()
        if args.part == "quickstart-matcha":
            from robusteval.tour import TourConfig, _matcha

            result = _matcha(tmp / "matcha", backend, TourConfig(max_new_tokens=args.max_new_tokens),
                             args.batch_size)
        else:
            import robusteval as rv
            from robusteval.attacks.matcha.pipeline import MatchaRunConfig, attack_matcha
            from robusteval.data.spec import DataSpec
            from robusteval.tour import sample_path

            run = MatchaRunConfig(
                data=DataSpec("jsonl", sample_path("math.jsonl"), answer_type="number", limit=args.limit),
                prompt=rv.PromptOptions(exemplars="math"), target_answer="clean", min_correct=0,
                attack_limit=args.examples, topk_ratio=0.25, epsilon=0.005,
                generation=rv.GenerationOptions(max_new_tokens=args.max_new_tokens), n_candidates=1, seed=0,
                judging=rv.JudgeOptions(judge="arith", semantic_judge="none"))
            result = attack_matcha(run, backend, tmp / "token", batch_size=args.batch_size)
        attacked = result.get("n_attacked")
        wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    figures = {
        "tree": str(Path(robusteval.__file__).parent), "model": spec, "part": args.part,
        "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "attacked": attacked,
        "peak_rss_bytes": peak, "sampled_peak_rss_bytes": sampler.peak, "phase_at_peak": sampler.phase,
        "rss_after_load_bytes": loaded_rss, "load_s": round(loaded_s, 1), "wall_s": round(wall, 1),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg()[0], "cpus": os.cpu_count(),
    }
    print(f"tree: {figures['tree']}", file=sys.stderr)
    print(f"{args.part} on {spec} (batch {args.batch_size}, {args.max_new_tokens} new tokens): "
          f"peak RSS {_gib(peak)} (after model load {_gib(loaded_rss)}); at the sampled peak: {sampler.phase or '-'}; "
          f"wall {wall:.0f} s (load average {load_before:.1f} -> {figures['loadavg_after']:.1f}: timings under load "
          f"are not comparable)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
