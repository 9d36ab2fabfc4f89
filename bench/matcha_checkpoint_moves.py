"""Which examples change outcome between ``success_check = "final"`` and ``"insertion-and-final"`` (docs/matcha.md).

Attacks the first 8 bundled math questions on the tiny trained Llama (the test suite's: seed 0, 200 steps) under
both rules, seed by seed, with a reasoning judge that finds every perturbed reasoning wrong, so only the answers
decide: every move between outcomes is the checkpoint's doing. Prints one markdown row per seed.

    python bench/matcha_checkpoint_moves.py --seeds 3-11
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.loaders import load_dataset
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.models.tiny import build_tiny_llama
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore


def every_reasoning_wrong(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [{"reasoning_correct": reference == candidate} for _, reference, candidate in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3-11", help="first-last")
    parser.add_argument("--limit", type=int, default=8)
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    work = Path(tempfile.mkdtemp(prefix="matcha-moves-"))
    backend = load_backend(f"hf:{build_tiny_llama(work / 'model', seed=0, train_steps=200)}", device="cpu")
    examples = load_dataset("jsonl", str(files("robusteval.data") / "samples" / "math.jsonl"), limit=args.limit,
                            answer_type="number")
    by_id = {ex.id: ex for ex in examples}

    def runner(name: str, check: str, seed: int) -> MatchaRunner:
        config = MatchaConfig(target_answer="clean", generation=GenerationOptions(max_new_tokens=24), steps=2, seed=seed, success_check=check)
        return MatchaRunner(backend, RunStore.open(work / name), AnswerFirstPrompt(default_exemplars("number")),
                            config, reasoning_judge=every_reasoning_wrong,
                            semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])

    probe = runner("clean", "final", 0)
    clean = [r for r in probe.clean_records(examples) if probe.attackable(r)[0]]
    print("| seed | final: UR / SR / WR | insertion-and-final: UR / SR / WR | examples whose outcome moved |")
    print("|---|---|---|---|")
    for seed in range(first, last + 1):
        found = {}
        for check in ("final", "insertion-and-final"):
            run = runner(f"{seed}-{check}", check, seed)
            judged = run.judge(run.attack_many([by_id[c["id"]] for c in clean], clean))
            found[check] = {r["id"]: r["outcome"] for r in judged}
        counts = {check: Counter(outcomes.values()) for check, outcomes in found.items()}
        moved = [f"{i}: {found['final'][i]} -> {found['insertion-and-final'][i]}" for i in found["final"]
                 if found["final"][i] != found["insertion-and-final"][i]]
        shown = [f"{c['unsuccessful']} / {c['success']} / {c['wrong']}" for c in counts.values()]
        print(f"| {seed} | {shown[0]} | {shown[1]} | {'; '.join(moved) or 'none'} |", flush=True)


if __name__ == "__main__":
    main()
