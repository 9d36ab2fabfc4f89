"""Host work per lock-step round of the MATCHA token attack (issue 40), on any machine.

The token attack at batch 8 (paper settings: 5 steps, insert 0.2, top-k 0.25, 1 candidate; judge arith, semantic
judge none) on a random Llama-3-shaped model of tiny sizes with the real Llama-3 tokenizer (as ``gpu_bench.py
--tiny``), answers forced (:func:`gpubench.common.forced_answers`). Reported: the lock-step rounds, their wall time
and the reads of tensor values made in them (:mod:`gpubench.host`), by kind of round; then, under the test suite's
device audit (the model on a simulated accelerator), the reads of tensors on the device alone: the syncs a GPU would
wait on, and their call sites. On a CPU the wall time is the host's Python and the tiny model's compute together.

    python bench/lockstep_host.py                     # 8 examples at batch 8, 16 new tokens
    python bench/lockstep_host.py --json host.json    # the figures as JSON too
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import contextlib
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
    """Build the tiny model, warm up on one example, then time the attack's rounds (every tensor read counted) and,
    unless ``--no-audit``, run it again under the test suite's device audit (``tests/helpers/devices.py``: the model
    on a simulated accelerator) counting only the reads of tensors on that accelerator: a GPU's syncs."""
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

    def attack(run_dir: Path, counter: HostSyncs, audit: Any = None) -> float:
        rv.attack_matcha(config, backend, run_dir, batch_size=args.batch_size)  # the clean pass alone
        began = time.perf_counter()
        with audit if audit is not None else contextlib.nullcontext(), counter:
            rv.attack_matcha(dataclasses.replace(config, attack_limit=None), backend, run_dir,
                             batch_size=args.batch_size)
        return time.perf_counter() - began

    with forced_answers(4):
        rv.attack_matcha(dataclasses.replace(config, data=rv.DataSpec("gsm8k", str(data), limit=1),
                                             attack_limit=None), backend, root / "warm-up", batch_size=1)
        load = os.getloadavg()
        counted = HostSyncs()
        attack_s = attack(root / "run", counted)
        device: HostSyncs | None = None
        if args.audit:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from helpers.devices import audit_devices

            with audit_devices(backend) as audit:
                device = HostSyncs(counts=audit.on_accelerator)
                attack(root / "audited", device)
    rounds = counted.rounds
    # What the attack decided, to compare runs of two commits: identical when only host work changed.
    outcomes = {r["id"]: {k: r.get(k) for k in ("perturbed_question_ids", "steps", "perturbed_completion", "outcome")}
                for r in rv.load_run(root / "run").records("matcha_outcome")}
    return {
        "examples": args.examples, "batch_size": args.batch_size, "steps": args.steps,
        "max_new_tokens": args.max_new_tokens, "threads": torch.get_num_threads(), "load_average": load,
        "attack_s": attack_s, "rounds": len(rounds), "lockstep_s": sum(r.seconds for r in rounds),
        "ms_per_round": 1000 * statistics.mean(r.seconds for r in rounds),
        "reads_per_round": statistics.mean(r.syncs for r in rounds), "reads_in_rounds": sum(r.syncs for r in rounds),
        "by_kind": counted.by_kind(),
        "device_syncs_per_round": None if device is None else statistics.mean(r.syncs for r in device.rounds),
        "device_syncs_in_rounds": None if device is None else sum(r.syncs for r in device.rounds),
        "device_uploads_per_round": None if device is None else statistics.mean(r.uploads for r in device.rounds),
        "device_uploads_in_rounds": None if device is None else sum(r.uploads for r in device.rounds),
        "device_by_kind": None if device is None else device.by_kind(),
        "device_sites": [] if device is None else [{"method": m, "site": s, "calls": n}
                                                   for (m, s), n in device.sites.most_common(args.sites)],
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
    parser.add_argument("--audit", action=argparse.BooleanOptionalAction, default=True,
                        help="also count the device syncs under the test suite's device audit (default: yes)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the figures there too")
    args = parser.parse_args(argv)
    figures = measure(args)
    print(f"token attack, {figures['examples']} examples at batch {figures['batch_size']}, {figures['steps']} steps, "
          f"{figures['max_new_tokens']} new tokens, {figures['threads']} thread(s), load average before "
          f"{', '.join(f'{x:.2f}' for x in figures['load_average'])}")
    print(f"attack {figures['attack_s']:.2f} s; {figures['rounds']} lock-step rounds, {figures['lockstep_s']:.2f} s: "
          f"{figures['ms_per_round']:.1f} ms and {figures['reads_per_round']:.1f} reads of any tensor's value per round")
    print(f"results digest {figures['results_digest']} (perturbed ids, step losses and verdicts, completions)")
    for kind, row in figures["by_kind"].items():
        print(f"  {kind}: {row['rounds']} rounds, {row['ms']:.1f} ms, {row['syncs']:.1f} reads each")
    if figures["device_syncs_per_round"] is not None:
        print(f"under the device audit: {figures['device_syncs_per_round']:.1f} reads of device tensors and "
              f"{figures['device_uploads_per_round']:.1f} copies to the device per round "
              f"({figures['device_syncs_in_rounds']} and {figures['device_uploads_in_rounds']} in all)")
        for kind, row in figures["device_by_kind"].items():
            print(f"  {kind}: {row['rounds']} rounds, {row['syncs']:.1f} reads and {row['uploads']:.1f} copies each")
        for site in figures["device_sites"]:
            print(f"  {site['calls']:5d} {site['method']} {site['site']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
