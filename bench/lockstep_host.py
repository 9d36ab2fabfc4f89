"""Host work per lock-step round of the MATCHA token attack (issue 40), on any machine.

The token attack at batch 8 (paper settings: 5 steps, insert 0.2, top-k 0.25, 1 candidate; judge arith, semantic
judge none) on a random Llama-3-shaped model of tiny sizes with the real Llama-3 tokenizer (as ``gpu_bench.py
--tiny``), answers forced (:func:`gpubench.common.forced_answers`). Reported: the lock-step rounds, their wall time
and the host-device syncs made in them (:mod:`gpubench.host`), by kind of round, and the call sites of the syncs.
On a CPU the wall time is the host's Python and the tiny model's compute together; the sync count is what a GPU
would wait on.

    python bench/lockstep_host.py                     # 8 examples at batch 8, 16 new tokens
    python bench/lockstep_host.py --json host.json    # the figures as JSON too
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import dataclasses
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # the gpubench package beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from gpubench.attack import matcha_config
from gpubench.common import forced_answers, make_backend, write_examples
from gpubench.host import HostSyncs
from gpubench.model import build_model, load_tokenizer

import robusteval as rv


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Build the tiny model, store the clean pass, warm up on one example, then count the attack's rounds."""
    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer, _ = load_tokenizer(args.shape)
    model = build_model(argparse.Namespace(shape=args.shape, tiny=True, seed=args.seed), tokenizer,
                        torch.device("cpu"), torch.float32)
    backend = make_backend(model, tokenizer, f"random:{args.shape}", args.batch_size, decoder="dynamic")
    root = Path(tempfile.mkdtemp(prefix="lockstep-host-"))
    settings = argparse.Namespace(steps=args.steps, max_new_tokens=args.max_new_tokens, seed=args.seed, data=None)
    data = write_examples(settings, args.examples, root / "examples.jsonl")
    config = matcha_config(settings, "token", args.examples, data)
    with forced_answers(4):
        rv.attack_matcha(dataclasses.replace(config, data=rv.DataSpec("gsm8k", str(data), limit=1),
                                             attack_limit=None), backend, root / "warm-up", batch_size=1)
        rv.attack_matcha(config, backend, root / "run", batch_size=args.batch_size)  # the clean pass alone
        load = os.getloadavg()
        began = time.perf_counter()
        with HostSyncs() as counted:
            rv.attack_matcha(dataclasses.replace(config, attack_limit=None), backend, root / "run",
                             batch_size=args.batch_size)
        attack_s = time.perf_counter() - began
    rounds = counted.rounds
    # What the attack decided, to compare runs of two commits: identical when only host work changed.
    outcomes = {r["id"]: {k: r.get(k) for k in ("perturbed_question_ids", "steps", "perturbed_completion", "outcome")}
                for r in rv.load_run(root / "run").records("matcha_outcome")}
    return {
        "examples": args.examples, "batch_size": args.batch_size, "steps": args.steps,
        "max_new_tokens": args.max_new_tokens, "threads": torch.get_num_threads(), "load_average": load,
        "attack_s": attack_s, "rounds": len(rounds), "lockstep_s": sum(r.seconds for r in rounds),
        "ms_per_round": 1000 * statistics.mean(r.seconds for r in rounds),
        "syncs_per_round": statistics.mean(r.syncs for r in rounds), "syncs_in_rounds": sum(r.syncs for r in rounds),
        "syncs_outside_rounds": counted.outside, "by_kind": counted.by_kind(),
        "sites": [{"method": m, "site": s, "calls": n} for (m, s), n in counted.sites.most_common(args.sites)],
        "results_digest": hashlib.sha256(json.dumps(outcomes, sort_keys=True).encode()).hexdigest()[:16],
        "outcomes": outcomes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="llama3-8b", help="the model family (tiny sizes; default llama3-8b)")
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the 2 shared cores)")
    parser.add_argument("--sites", type=int, default=12, help="the call sites listed")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the figures there too")
    args = parser.parse_args(argv)
    figures = measure(args)
    print(f"token attack, {figures['examples']} examples at batch {figures['batch_size']}, {figures['steps']} steps, "
          f"{figures['max_new_tokens']} new tokens, {figures['threads']} thread(s), load average before "
          f"{', '.join(f'{x:.2f}' for x in figures['load_average'])}")
    print(f"attack {figures['attack_s']:.2f} s; {figures['rounds']} lock-step rounds, {figures['lockstep_s']:.2f} s: "
          f"{figures['ms_per_round']:.1f} ms and {figures['syncs_per_round']:.1f} host syncs per round "
          f"({figures['syncs_in_rounds']} in rounds, {figures['syncs_outside_rounds']} outside)")
    print(f"results digest {figures['results_digest']} (perturbed ids, step losses and verdicts, completions)")
    for kind, row in figures["by_kind"].items():
        print(f"  {kind}: {row['rounds']} rounds, {row['ms']:.1f} ms, {row['syncs']:.1f} syncs each")
    for site in figures["sites"]:
        print(f"  {site['calls']:5d} {site['method']} {site['site']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
