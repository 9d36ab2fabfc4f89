"""Perturbation throughput: texts per second per core for every dictionary-based method.

Perturbs the premises of an OCNLI-sized dataset (default: ../shared/data/ocnli/dev.json, 3,000 lines) with each
method on one thread, after one warm-up pass that builds the method's indices (reported separately). The
baseline measured in the same run is jieba word segmentation alone, the floor that every word-level method
pays; the target is 2,000 texts/s per core.

    python bench/perturb_bench.py                       # Chinese methods on OCNLI premises
    python bench/perturb_bench.py --language en         # English methods on GSM8K questions
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from robusteval.perturbations import available_methods, build_perturbation
from robusteval.perturbations.segment import segment_words

TARGET = 2000.0
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DICTIONARY_FREE = {"W-wordembedding", "W-maskedlm", "S-backtranslation"}  # need a model: not in this benchmark


def load_texts(language: str, path: str | None, limit: int) -> list[str]:
    if language == "zh":
        file = Path(path) if path else SHARED / "ocnli" / "dev.json"
        key = "sentence1"
    else:
        file = Path(path) if path else SHARED / "gsm8k" / "test.jsonl"
        key = "question"
    texts = []
    with open(file, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                texts.append(json.loads(line)[key])
            if len(texts) >= limit:
                break
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=["zh", "en"], default="zh")
    parser.add_argument("--data-file", default=None)
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--methods", default=None, help="comma-separated subset")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    texts = load_texts(args.language, args.data_file, args.limit)
    chosen = set(args.methods.split(",")) if args.methods else None

    segment_words(texts[0], args.language)  # load the segmenter before timing
    began = time.perf_counter()
    for text in texts:
        segment_words(text, args.language)
    baseline = len(texts) / (time.perf_counter() - began)
    print(f"{len(texts)} texts ({args.language}), one thread; target {TARGET:.0f} texts/s per core")
    print(f"baseline (segmentation only): {baseline:,.0f} texts/s")
    print(f"{'method':<18}{'build s':>9}{'texts/s':>11}{'x target':>10}{'x baseline':>12}{'changed':>9}{'edits/text':>12}")
    failed = False
    for info in available_methods(args.language):
        if info.name in DICTIONARY_FREE or (chosen and info.name not in chosen):
            continue
        start = time.perf_counter()
        method = build_perturbation(info.name, args.language)
        method.perturb(texts[0], rng=random.Random(0))  # builds lazy indices
        build = time.perf_counter() - start
        began = time.perf_counter()
        results = [method.perturb(text, rng=random.Random(i)) for i, text in enumerate(texts)]
        rate = len(texts) / (time.perf_counter() - began)
        changed = sum(r.changed for r in results) / len(results)
        edits = sum(len(r.edits) for r in results) / len(results)
        failed |= rate < TARGET
        print(f"{info.name:<18}{build:>9.2f}{rate:>11,.0f}{rate / TARGET:>10.2f}{rate / baseline:>12.2f}"
              f"{changed:>9.0%}{edits:>12.2f}")

    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
