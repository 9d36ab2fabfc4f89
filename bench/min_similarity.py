"""Kept share per ``--min-similarity`` X: which minimum keeps >= 95% of the back-translations / substitutions.

S-backtranslation: back-translates a dataset once with the gate at 0 (every candidate passes and records its
similarity to the original), then reports, for each X, the share of the texts that reached the gate whose
candidate is >= X, with its Wilson 95% interval: exactly what the gate keeps (one greedy candidate per text).
W-maskedlm: perturbs the dataset once per X with the gate on (a refused word tries its next candidate, then the
next word) and reports the share of texts that did not fall back to the original.

    python bench/min_similarity.py                                  # bundled samples, Gemma 3 270M translator
    python bench/min_similarity.py --data ../shared/data/ocnli/dev.json --dataset ocnli --limit 50
    python bench/min_similarity.py --method W-maskedlm --mlm-model PATH
"""

from __future__ import annotations

import argparse
import time
from importlib.resources import files

from robusteval.data.spec import DataSpec
from robusteval.metrics.stats import proportion
from robusteval.perturbations.base import SimilarityCheck
from robusteval.perturbations.dataset import perturb_examples
from robusteval.perturbations.maskedlm import MaskedLMPerturbation
from robusteval.perturbations.registry import build_perturbation
from robusteval.perturbations.similarity import measure_label
from robusteval.perturbations.spec import PerturbationSpec

GRID = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
SAMPLES = ("math.jsonl", "yesno.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a dataset file (default: both bundled samples)")
    parser.add_argument("--dataset", default="jsonl")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--method", default="S-backtranslation", choices=("S-backtranslation", "W-maskedlm"))
    parser.add_argument("--translator", help="model spec (default: the shipped Gemma 3 270M)")
    parser.add_argument("--mlm-model")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    if args.data:
        examples = DataSpec(args.dataset, args.data, limit=args.limit).load()
    else:
        examples = [ex for name in SAMPLES for ex in DataSpec(
            "jsonl", str(files("robusteval.data") / "samples" / name), answer_type="text", limit=args.limit).load()]
    translator = args.translator
    if args.method == "S-backtranslation" and translator is None:
        from robusteval.models.embedded import embedded_model_spec

        translator = embedded_model_spec()
    spec = PerturbationSpec(translator=translator, mlm_model=args.mlm_model, min_similarity=0.0)
    language = spec.resolve_language(examples)
    start = time.perf_counter()
    method = build_perturbation(args.method, language, spec.method_options(device=args.device))
    def run() -> list[SimilarityCheck]:
        results = perturb_examples(examples, method, fields=spec.text_fields(examples), seed=0,
                                   protect=spec.protection(examples))
        return [r.similarity for ex in results for r in ex.results.values() if r.similarity is not None]

    checks = run()
    values = sorted(check.value for check in checks)
    print(f"{args.method} on {len(examples)} texts ({language}), {time.perf_counter() - start:.0f} s; {len(checks)} "
          f"reached the gate ({measure_label(language)}); other rejections: "
          f"{dict(getattr(method, 'rejections', {}))}")
    print("| X | kept | share [95% CI] |\n|---|---|---|")
    for x in GRID:
        if isinstance(method, MaskedLMPerturbation) and method.gate is not None:
            method.gate.minimum = x  # one gate: its embeddings are memoised across the grid
            kept_checks = [check for check in run() if not check.fell_back]
            kept = proportion(len(kept_checks), len(checks))
        else:
            kept = proportion(sum(1 for v in values if v >= x), len(values))
        ci = kept["ci95"]
        shown = "-" if kept["value"] is None else f"{kept['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"  # type: ignore[index]
        print(f"| {x:g} | {kept['k']}/{kept['n']} | {shown} |")
    if values:
        print("lowest similarities:", ", ".join(f"{v:.3f}" for v in values[:5]))


if __name__ == "__main__":
    main()
