"""``--count authors`` token attack at one batch, lock-step gathering off against on (issue 40), alternating.

Under ``--count authors`` each token is inserted and gated one at a time, so the examples of a batch reach the
insertion checkpoint (a whole generation) in different lock-step rounds. With gathering off
(``lockstep.GATHER_ROUNDS = 0``, the scheduler before issue 40) each round serves the checkpoints of the examples that
got there in it; on (the default), a checkpoint waits for the examples still gating and the batch's checkpoints are
one generation. The clean pass runs once; every measured attack gets a fresh store (no cached verdict carried over),
its semantic gate an LLM judge on the attacked model itself (``--semantic-judge``: another spec, or ``none``) and its
reasoning judge ``arith``. The records must be identical (exit 1 if not); printed: seconds (wall and process CPU) per
attacked example, the insertion-checkpoint generations and their rows, the lock-step rounds, the load average.

    python bench/authors_gather.py --tiny --reps 3                 # tiny trained Llama, ~1 min
    python bench/authors_gather.py --examples 4 --reps 2          # embedded Gemma 3 270M
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.attacks.matcha import lockstep
from robusteval.attacks.matcha.pipeline import matcha_judges
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.models import Backend, load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore

# Decisions (the steps' logged losses may differ by float rounding: batches are padded differently).
COMPARED = ("insertions", "replaced_positions", "perturbed_question_ids", "perturbed_completion", "decided_at", "answer_kept",
            "outcome")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default=None, metavar="hf:DIR", help="model spec (default: the embedded Gemma)")
    which.add_argument("--tiny", action="store_true", help="build a tiny trained Llama in a temp dir")
    parser.add_argument("--examples", type=int, default=4, help="first N examples of the sample math set (4)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--reps", type=int, default=2, help="off/on pairs, alternating (2)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--semantic-judge", default=None, help="default: an LLM judge on the attacked model")
    parser.add_argument("--seed", type=int, default=5)
    return parser.parse_args(argv)


def model_spec(args: argparse.Namespace, workdir: Path) -> str:
    if args.tiny:
        from robusteval.models.tiny import build_tiny_llama

        return f"hf:{build_tiny_llama(workdir / 'tiny', train_steps=200)}"
    if args.model:
        return str(args.model)
    from robusteval.models.embedded import embedded_model_spec

    return embedded_model_spec()


def attack(backend: Backend, spec: str, semantic: str, config: MatchaConfig, examples: list[Any],
           clean: list[dict[str, Any]], batch: int, root: Path, gather: int) -> dict[str, Any]:
    """One measured attack of ``examples`` in batches of ``batch``, gathering on (``gather`` rounds) or off (0)."""
    lockstep.GATHER_ROUNDS = gather
    with RunStore.open(root, identity={"bench": "authors-gather", "gather": gather}) as store:
        reasoning, gate, _ = matcha_judges(store, "arith", semantic, lambda _: backend, counting="authors")
        runner = MatchaRunner(backend, store, AnswerFirstPrompt(default_exemplars("number")), config,
                              reasoning_judge=reasoning, semantic_judge=gate, batch_size=batch)
        # Per batch: (rows, seconds) of each generation (the last is the final one).
        generations: list[list[tuple[int, float]]] = []
        decode = runner._decode

        def counted(rows: Any) -> Any:
            began = time.perf_counter()
            out = decode(rows)
            generations[-1].append((len(rows), time.perf_counter() - began))
            return out

        runner._decode = counted  # type: ignore[method-assign]
        rounds = [0]
        held_back = lockstep.held_back

        def counting_rounds(*a: Any, **k: Any) -> set[int]:
            rounds[0] += 1
            return held_back(*a, **k)

        lockstep.held_back = counting_rounds
        load = os.getloadavg()[0]
        began, cpu = time.perf_counter(), time.process_time()
        records: list[dict[str, Any]] = []
        try:
            for start in range(0, len(clean), batch):
                generations.append([])
                records += runner.attack_many(examples[start:start + batch], clean[start:start + batch])
            records = runner.judge(records)
        finally:
            lockstep.held_back = held_back
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    checkpoints = [rows for calls in generations for rows, _ in calls[:-1]]
    checkpoint_s = sum(seconds for calls in generations for _, seconds in calls[:-1])
    return {"gather": gather, "wall": wall, "cpu": cpu, "n": len(records), "records": records, "load": load,
            "load_after": os.getloadavg()[0], "checkpoints": checkpoints, "checkpoint_s": checkpoint_s,
            "rounds": rounds[0]}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    default_gather = lockstep.GATHER_ROUNDS
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = model_spec(args, work)
        backend = load_backend(spec, device="cpu", batch_size=args.batch_size)
        semantic = args.semantic_judge or spec
        config = MatchaConfig(level="token", target_answer="clean",
                              generation=GenerationOptions(max_new_tokens=args.max_new_tokens),
                              steps=args.steps, seed=args.seed, counting="authors",
                              success_check="insertion-and-final", replacement_positions="corrected")
        data = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
        examples = load_dataset("jsonl", data, limit=args.examples, answer_type="number")
        with RunStore.open(work / "clean", identity={"bench": "authors-gather-clean"}) as store:
            runner = MatchaRunner(backend, store, AnswerFirstPrompt(default_exemplars("number")), config,
                                  reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                                  semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs],
                                  batch_size=args.batch_size)
            clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
        by_id = {ex.id: ex for ex in examples}
        chosen = [by_id[r["id"]] for r in clean]
        print(f"model {spec}; {len(clean)} of {len(examples)} examples attackable; batch {args.batch_size}; "
              f"steps {args.steps}; max new tokens {args.max_new_tokens}; semantic judge {semantic}", flush=True)
        # One unmeasured warm-up attack (first-call costs), then off/on pairs alternating.
        attack(backend, spec, semantic, config, chosen, clean, args.batch_size, work / "warm", default_gather)
        runs = []
        for rep in range(args.reps):
            for gather in (0, default_gather) if rep % 2 == 0 else (default_gather, 0):
                run = attack(backend, spec, semantic, config, chosen, clean, args.batch_size,
                             work / f"r{rep}-{gather}", gather)
                runs.append(run)
                print(f"gather {gather:>3}: {run['wall'] / run['n']:.2f} s/example wall, "
                      f"{run['cpu'] / run['n']:.2f} CPU s/example, checkpoint generations (rows) {run['checkpoints']} "
                      f"{run['checkpoint_s']:.1f} s in all, "
                      f"{run['rounds']} rounds, load {run['load']:.2f}->{run['load_after']:.2f}", flush=True)
    lockstep.GATHER_ROUNDS = default_gather
    same = all([{k: r.get(k) for k in COMPARED} for r in a["records"]]
               == [{k: r.get(k) for k in COMPARED} for r in runs[0]["records"]] for a in runs)
    for gather in (0, default_gather):
        mine = [r for r in runs if r["gather"] == gather]
        walls = sorted(r["wall"] / r["n"] for r in mine)
        cpus = sorted(r["cpu"] / r["n"] for r in mine)
        print(f"gather {gather:>3}: median {walls[len(walls) // 2]:.2f} s/example wall, "
              f"{cpus[len(cpus) // 2]:.2f} CPU s/example over {len(mine)} run(s)")
    print("records identical across all runs" if same else "RECORDS DIFFER between runs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
