"""Dynamic-cache decode per step (issue 40): robusteval's DynamicDecoder against a plain transformers loop and the
static decoder, at batch 1 and 8, in one run.

On an H100 the dynamic path measured 130.8 ms/step at batch 1 (issue 40, run 1, after the static engine had been
compiled, captured and given up at load). This script puts the three side by side on one model and one prompt:

* ``raw``: a plain transformers loop (``DynamicCache``, last-position logits, greedy, the chosen ids read back
  each step), over the whole prompt;
* ``dynamic``: ``HFBackend.decode_many`` with ``decoder="dynamic"`` (the prefix cached, the suffixes prefilled);
* ``static``: ``decoder="static"`` (``step_compile`` auto: CUDA graphs on a GPU, run eagerly on a CPU);
* ``dynamic after failure`` and ``raw after failure`` (``--after-failure``): the same backend once its static
  engine (compiled: on a GPU with CUDA graphs, on a CPU traced by dynamo) was given up, the state a failed
  load-time self-check leaves, and the plain loop again in that process (if it slowed down too, the cost is
  global, not the decoder's).

ms/step comes from runs of N and N/2 new tokens (prefill and per-call costs cancel), the best of ``--repeats``;
wall time, and on a CPU also the process's CPU time (other processes sharing the cores inflate wall time, not
it). Operations dispatched per step and host reads per step (each a device synchronisation on a GPU) are counted
with torch.profiler: they do not depend on the load.

    python bench/dynamic_decode.py --tiny --threads 1            # CPU: Llama-3 shape, tiny sizes, 2 layers
    python bench/dynamic_decode.py --after-failure               # GPU: the 8B shape, bf16
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpubench.decode import decode_prompt, per_step
from gpubench.model import SHAPES, TINY, build_model, load_tokenizer, resolve_device, sync

from robusteval.models.hf import HFBackend

HOST_READS = ("aten::_local_scalar_dense",)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--tiny", action="store_true", help="the shape's family and vocabulary, tiny sizes")
    parser.add_argument("--layers", type=int, default=None, help="hidden layers (default: the shape's or tiny's)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--after-failure", action="store_true",
                        help="also the dynamic path after a static engine was warmed up and given up")
    parser.add_argument("--no-static", action="store_true", help="leave the static decoder out")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def raw_loop(model: Any, cache_kwarg: str, ids: torch.Tensor) -> Callable[[int], int]:
    """``run(n)``: n greedy tokens per row from a plain transformers loop; returns n."""
    from transformers import DynamicCache

    @torch.no_grad()
    def run(n: int) -> int:
        cache = DynamicCache()
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **{cache_kwarg: cache})
        for step in range(n):
            tokens = out.logits[:, -1, :].argmax(dim=-1)
            tokens.tolist()  # the ids are read back each step, as any decode loop does
            if step == n - 1:
                break
            out = model(input_ids=tokens[:, None], use_cache=True, logits_to_keep=1, **{cache_kwarg: cache})
        return n

    return run


def ours(backend: HFBackend, prefix: list[int], suffixes: list[list[int]]) -> Callable[[int], int]:
    def run(n: int) -> int:
        rows = backend.decode_many(prefix, suffixes, max_new_tokens=n)
        return max(len(r.token_ids) for r in rows)

    return run


def measure(run: Callable[[int], int], new: int, repeats: int, device: torch.device) -> dict[str, float]:
    """Best ms/step over ``repeats`` pairs of runs (wall and process CPU time)."""
    half = max(new // 2, 1)
    run(min(8, new))
    walls, cpus = [], []
    for _ in range(repeats):
        sync(device)
        w0, c0 = time.perf_counter(), time.process_time()
        steps = run(new)
        sync(device)
        w1, c1 = time.perf_counter(), time.process_time()
        steps_half = run(half)
        sync(device)
        w2, c2 = time.perf_counter(), time.process_time()
        walls.append(per_step(w1 - w0, w2 - w1, steps, steps_half) * 1000)
        cpus.append(per_step(c1 - c0, c2 - c1, steps, steps_half) * 1000)
    return {"ms": min(walls), "cpu_ms": min(cpus)}


def operations(run: Callable[[int], int]) -> dict[str, float]:
    """Operations and host reads per step: a profile of 32 new tokens less one of 16, over 16."""
    from torch.profiler import ProfilerActivity, profile

    counts = []
    for n in (16, 32):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run(n)
        counts.append(Counter({e.key: e.count for e in prof.key_averages()}))
    per = {key: (counts[1][key] - counts[0][key]) / 16 for key in counts[1]}
    return {"ops": sum(per.values()), "host_reads": sum(per.get(k, 0.0) for k in HOST_READS)}


def backend(model: Any, tokenizer: Any, batch: int, decoder: str, step_compile: str = "auto") -> HFBackend:
    made = HFBackend(model, tokenizer, "hf:random", batch_size=batch, decoder=decoder, step_compile=step_compile)
    made.warm_up()
    made.eos_ids = set()  # BENCH ONLY: a random model's end-of-sequence token is noise
    return made


def main(argv: list[str] | None = None) -> None:
    import os

    import transformers

    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    if args.layers:
        (TINY if args.tiny else SHAPES[args.shape])["num_hidden_layers"] = args.layers
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    tokenizer, _ = load_tokenizer(args.shape)
    model = build_model(args, tokenizer, device, dtype)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)"
    print(f"{args.shape}{' tiny' if args.tiny else ''}, {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M "
          f"parameters, {model.config.num_hidden_layers} layers, {str(dtype).removeprefix('torch.')} on {name}; "
          f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads; "
          f"prompt {args.prompt_tokens} tokens, {args.max_new_tokens} new; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for batch in args.batches:
        dynamic = backend(model, tokenizer, batch, "dynamic")
        prefix, suffixes = decode_prompt(dynamic, batch, args.prompt_tokens)
        ids = torch.tensor([prefix + s for s in suffixes], device=device)
        runs: dict[str, Callable[[int], int]] = {"raw": raw_loop(model, dynamic._cache_kwarg, ids),
                                                 "dynamic": ours(dynamic, prefix, suffixes)}
        figures = {label: measure(run, args.max_new_tokens, args.repeats, device) for label, run in runs.items()}
        if not args.no_static or args.after_failure:
            # One static engine per batch (one compilation): measured, then (--after-failure) given up.
            # On a CPU with --after-failure its step is traced by dynamo (run eagerly), so something was compiled.
            mode = "eager" if args.after_failure and device.type != "cuda" else "auto"
            static = backend(model, tokenizer, batch, "static", mode)
            if static.decoder == "static" and not args.no_static:
                runs["static"] = ours(static, prefix, suffixes)
                figures["static"] = measure(runs["static"], args.max_new_tokens, args.repeats, device)
            if args.after_failure and static._static is not None:
                static._static.fail("bench", RuntimeError("given up on purpose (--after-failure)"))
                # The raw loop again: if it slowed down too, what the failure left is global, not the decoder's.
                for label, run in (("dynamic after failure", ours(static, prefix, suffixes)),
                                   ("raw after failure", runs["raw"])):
                    runs[label] = run
                    figures[label] = measure(run, args.max_new_tokens, args.repeats, device)
        counted = {label: operations(runs[label]) for label in ("raw", "dynamic", "dynamic after failure")
                   if label in runs}
        raw = figures["raw"]
        for label, got in figures.items():
            ops = counted.get(label)
            print(f"batch {batch}: {label:<22} {got['ms']:8.2f} ms/step ({got['ms'] / raw['ms']:.2f}x raw)"
                  + (f", CPU {got['cpu_ms']:.2f} ms/step ({got['cpu_ms'] / raw['cpu_ms']:.2f}x)"
                     if device.type == "cpu" else "")
                  + (f"; {ops['ops']:.0f} operations and {ops['host_reads']:.0f} host reads per step" if ops
                     else ""), flush=True)


if __name__ == "__main__":
    main()
