"""Speed of the deterministic reasoning judges (``grounding``, ``arith``) on long chains of thought.

Synthetic GSM8K-style items (:func:`synthetic_item`): a bakery question and a candidate chain of N sentences
that mixes equations, prose derivations ("adding 7 gives 52"), unit conversions, rounded divisions,
self-corrections, restated question facts and invented numbers, so every rule of the grounding judge runs.
The chains are seeded: the same N and seed give the same text.

For each chain length the script times ``check_grounding`` and ``check_arithmetic`` per item (median of
``--repeat`` runs). With ``--baseline REV`` it also loads ``src/robusteval/judges/grounding.py`` as it was at
git revision REV (a separate module, nothing installed) and times it on the same items in the same process:
the table then shows old/new ratios, and the script checks that both find the same issues on every synthetic
chain and on every item of the labelled set ``tests/data/judge_audit.jsonl`` (exit 1 when they differ).

    python bench/judges_bench.py                       # 10, 40, 200 sentences
    python bench/judges_bench.py --baseline HEAD~3     # old/new ratios, issues compared
    python bench/judges_bench.py --sizes 10 40 --seeds 5 --repeat 5

Record the load average (printed) next to the figures: on a shared machine the times move, the ratios less.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "tests" / "data" / "judge_audit.jsonl"

Check = Callable[[str, str, str], list[dict[str, Any]]]


def synthetic_item(n_sentences: int, seed: int = 0) -> tuple[str, str, str]:
    """(question, reference, candidate) with a candidate chain of ``n_sentences`` sentences (plus its answer)."""
    rng = random.Random(f"grounding-bench-{n_sentences}-{seed}")
    loaves, cups, hours, share = rng.randint(12, 90), rng.randint(2, 9), rng.randint(2, 6), rng.choice((20, 25, 40))
    question = (f"A bakery bakes {loaves} loaves every day. Each loaf needs {cups} cups of flour and bakes for "
                f"{hours} hours. The baker sells {share}% of the loaves at $3 each and gives 12 away every week. "
                "How many cups of flour does the bakery use in 30 days?")
    daily = loaves * cups
    answer = daily * 30
    reference = (f"The answer is {answer}. Each day uses {loaves} * {cups} = {daily} cups. "
                 f"In 30 days that is {daily} * 30 = {answer} cups.")
    pool = [loaves, cups, hours, share, 3, 12, 30]
    sentences: list[str] = []
    last_equation: tuple[int, str, int, int] | None = None
    for _ in range(n_sentences):
        kind = rng.choices(("equation", "prose", "convert", "decimal", "invented", "correct", "restate", "mention"),
                           (35, 20, 10, 10, 8, 6, 5, 6))[0]
        x, y = rng.choice(pool), rng.choice(pool)
        if kind == "equation":
            op = rng.choice("+-*") if x * y < 100_000 else rng.choice("+-")
            value = x + y if op == "+" else x - y if op == "-" else x * y
            stated = value + rng.choice((1, 2, 10)) if rng.random() < 0.1 else value  # now and then a false one
            sentences.append(f"Next, {x} {op} {y} = {stated} cups.")
            last_equation = (x, op, y, value) if stated != value else None
            pool.append(stated)
        elif kind == "prose":
            value = x + y if rng.random() < 0.6 else abs(x - y)
            sentences.append(f"Adding {y} to the {x} loaves gives {value} in total." if value == x + y
                             else f"Taking {min(x, y)} from {max(x, y)} leaves {value}.")
            pool.append(value)
        elif kind == "convert":
            sentences.append(f"That is {hours} hours, or {hours * 60} minutes of baking.")
        elif kind == "decimal" and y:
            sentences.append(f"Per loaf that is {x} / {y} = {round(x / y, 2)} cups on average.")
        elif kind == "invented":
            sentences.append(f"Suppose another {rng.randint(1000, 9999)} loaves are stored in the cellar.")
        elif kind == "correct" and last_equation:
            a, op, b, value = last_equation
            sentences.append(f"Wait, {a} {op} {b} should be {value}, so the total is {value}.")
            last_equation = None
        elif kind == "restate":
            other = rng.choice((loaves, loaves, cups, share))
            sentences.append(f"The bakery bakes {other} loaves every day.")
        else:
            sentences.append(f"She also keeps {x} cups of flour aside.")
    sentences.append(f"So the bakery uses {daily} * 30 = {answer} cups.")
    return question, reference, f"The answer is {answer}. " + " ".join(sentences)


def labelled_items() -> list[tuple[str, str, str, str]]:
    """(id, question, reference, candidate) of the labelled set, answer-first as the audit asks the judge."""
    out = []
    for line in LABELLED.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            head = f"The answer is {r['answer']}. " if r.get("answer") else ""
            out.append((r["id"], r["question"], head + r["reference_cot"], head + r["perturbed_cot"]))
    return out


def module_at(revision: str) -> ModuleType:
    """``robusteval.judges.grounding`` as it was at git ``revision``, loaded under another name."""
    text = subprocess.run(["git", "show", f"{revision}:src/robusteval/judges/grounding.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="grounding-")) / "grounding_baseline.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("grounding_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    # Registering the old judge would replace the current one in this process: keep the registry as it is.
    from robusteval.judges import base

    register = base.register_judge
    base.register_judge = lambda *a, **k: (lambda f: f)  # type: ignore[assignment]
    try:
        spec.loader.exec_module(module)
    finally:
        base.register_judge = register
    return module


def median_seconds(check: Check, items: list[tuple[str, str, str]], repeat: int) -> float:
    """Median over ``repeat`` runs of the seconds per item."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            check(*item)
        times.append((time.perf_counter() - start) / len(items))
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 40, 200], help="sentences per chain")
    parser.add_argument("--seeds", type=int, default=3, help="chains per size")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size (the median is shown)")
    parser.add_argument("--baseline", metavar="REV", help="also time grounding.py at this git revision")
    args = parser.parse_args(argv)

    from robusteval.judges.arithmetic import check_arithmetic
    from robusteval.judges.grounding import check_grounding

    old: Check | None = module_at(args.baseline).check_grounding if args.baseline else None
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    differ = 0
    if old is not None:
        for item_id, *item in labelled_items():
            if old(*item) != check_grounding(*item):
                differ += 1
                print(f"labelled item {item_id}: issues differ")
    header = "| sentences | grounding (s/item) | arith (s/item) |" + (" grounding before | before/now |" if old else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for size in args.sizes:
        items = [synthetic_item(size, seed) for seed in range(args.seeds)]
        new_s = median_seconds(check_grounding, items, args.repeat)
        arith_s = median_seconds(lambda q, r, c: check_arithmetic(c).equations, items, args.repeat)
        row = f"| {size} | {new_s:.4f} | {arith_s:.4f} |"
        if old is not None:
            for item in items:
                if old(*item) != check_grounding(*item):
                    differ += 1
                    print(f"synthetic chain of {size} sentences: issues differ")
            old_s = median_seconds(old, items, args.repeat)
            row += f" {old_s:.4f} | {old_s / new_s:.1f}x |"
        print(row)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if old is not None:
        print("issues identical: " + ("yes" if not differ else f"no ({differ} items differ)"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
