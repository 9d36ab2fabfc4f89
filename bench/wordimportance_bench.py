"""Query efficiency of the word-importance attack against a plain greedy baseline (same target, same budget).

The baseline perturbs words in text order with no ranking stage (``rank=False``); everything else (method,
candidates, budget, confidence estimator, α) is identical. Figures of merit: attack success rate and the
average number of queries per successful attack, per perturbation rate, and their ratio baseline/ranked.

    python bench/wordimportance_bench.py                          # tiny NLI classifier built here, OCNLI
    python bench/wordimportance_bench.py --model hf:./my-model --template nli-zh --examples 100
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="target spec (default: a tiny NLI classifier built here)")
    parser.add_argument("--template", default=None, help="template (default: the tiny model's own)")
    parser.add_argument("--data-file", default=str(SHARED / "ocnli" / "dev.json"))
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--methods", default="C-homophone,W-synonym,C-traditional")
    parser.add_argument("--rates", default="0.1,0.2,0.3")
    parser.add_argument("--budget", type=int, default=150)
    parser.add_argument("--confidence", default="logprob", choices=["logprob", "sample", "greedy"])
    args = parser.parse_args()

    import torch

    torch.set_num_threads(2)
    from robusteval.attacks.wordimportance import WordImportanceConfig, attack_example
    from robusteval.data.loaders import load_dataset
    from robusteval.evals.classification import ClassificationTemplate, LabelClassifier
    from robusteval.metrics.wordimportance import attack_summary
    from robusteval.models import load_backend
    from robusteval.perturbations import Protection, build_perturbation
    from robusteval.store import RunStore

    work = Path(tempfile.mkdtemp(prefix="wi-bench-"))
    if args.model is None:
        from robusteval.models.tiny import build_tiny_nli_classifier

        began = time.perf_counter()
        model_dir = build_tiny_nli_classifier(work / "tiny-nli", seed=0)
        print(f"built the tiny NLI classifier in {time.perf_counter() - began:.1f} s")
        spec, template_source = f"hf:{model_dir}", args.template or str(model_dir / "template.json")
    else:
        spec, template_source = args.model, args.template or "nli-zh"
    backend = load_backend(spec)
    template = ClassificationTemplate.load(template_source)
    examples = load_dataset("ocnli", args.data_file, limit=args.examples)
    rates = tuple(float(r) for r in args.rates.split(","))
    protect = Protection(words=frozenset(w for words in template.labels.values() for w in words))
    print(f"target {backend.name}, {len(examples)} OCNLI examples, budget {args.budget}, rates {list(rates)}, "
          f"confidence {args.confidence}")
    header = f"{'method':<15}{'search':<9}{'rate':>6}{'ASR':>8}{'q/success':>11}{'q/example':>11}{'seconds':>9}"
    print(header)
    for name in args.methods.split(","):
        method = build_perturbation(name, "zh")
        results = {}
        for search, rank in (("ranked", True), ("greedy", False)):
            config = WordImportanceConfig(rates=rates, budget=args.budget, confidence=args.confidence,
                                          fields=("premise", "hypothesis"), language="zh", rank=rank)
            # A fresh store per search: neither profits from the other's cached queries.
            with RunStore.open(work / f"{name}-{search}", identity={"bench": name, "search": search}) as store:
                classifier = LabelClassifier(backend, template, store, soft=args.confidence == "logprob")
                began = time.perf_counter()
                records = [attack_example(ex, classifier, [method], config, protect=protect) for ex in examples]
                seconds = time.perf_counter() - began
            results[search] = (attack_summary(records, rates), seconds)
        for rate in rates:
            key = f"{rate:g}"
            for search in ("ranked", "greedy"):
                summary, seconds = results[search]
                row = summary["by_rate"][key]
                asr = row["attack_success_rate"] or 0.0
                qps = row["avg_queries_per_success"]
                print(f"{name:<15}{search:<9}{rate:>6g}{asr:>8.1%}{(qps or float('nan')):>11.1f}"
                      f"{(row['avg_queries'] or float('nan')):>11.1f}{seconds:>9.1f}")
            ranked, greedy = results["ranked"][0]["by_rate"][key], results["greedy"][0]["by_rate"][key]
            if ranked["avg_queries_per_success"] and greedy["avg_queries_per_success"]:
                print(f"{'':<15}{'ratio':<9}{rate:>6g}  ASR ranked-greedy "
                      f"{(ranked['attack_success_rate'] or 0) - (greedy['attack_success_rate'] or 0):+.1%}, "
                      f"queries/success greedy/ranked "
                      f"{greedy['avg_queries_per_success'] / ranked['avg_queries_per_success']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
