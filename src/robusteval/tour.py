"""The quick-start: a tour of all four methods on the shipped model and the bundled samples, then one report.

Every part is the library's own pipeline on data shipped with robusteval, sized so that a first run (model
conversion included) stays within a few minutes on 2 CPU cores:

1. MATCHA, token level, on the 30 math word problems (the arithmetic and grounding checkers judge: a false
   equation or an ungrounded quantity is wrong reasoning, and each abstains where it has nothing to check; its first
   attacks);
2. VAR-MATH: the packaged example templates, a few instances each, strict and loose scores and the diagnosis
   (memorisation or unstable reasoning) against the templates' original problems;
3. a perturbed benchmark: the 20 yes/no questions as a classification set, English character-level
   perturbations, accuracy per set and the RB-index;
4. a hard-label word-importance attack on a few of the yes/no questions, success per perturbation rate.

Each part is a run directory under ``out`` (resumable: a second run takes seconds); :func:`tour_report`
then writes ``out/report.html``, one self-contained page with a section per part.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.data.spec import DataSpec
from robusteval.models.generation import GenerationOptions

#: English perturbations that need no optional package (the demo extra installs none).
ROBUSTNESS_SETS = ("C-keyboard", "C-swap", "C-ocr")


def sample_path(file_name: str) -> str:
    return str(resources.files("robusteval.data") / "samples" / file_name)


@dataclass(frozen=True)
class TourConfig:
    attack_limit: int = 8  # MATCHA: the first attackable math questions (see cli/quickstart.py)
    max_new_tokens: int = 80
    n_candidates: int = 1
    min_correct: int = 4
    variant_instances: int = 2  # VAR-MATH instances per template
    variants_max_new_tokens: int = 96
    wordimportance_examples: int = 6
    wordimportance_budget: int = 30
    seed: int = 0
    parts: tuple[str, ...] = field(default=("matcha", "variants", "robustness", "wordimportance"))


def run_tour(out: str | os.PathLike[str], backend: Any, config: TourConfig = TourConfig(), *,
             batch_size: int = 8) -> dict[str, Any]:
    """Run every part of the tour with ``backend``; returns {part: summary} (and each part's run directory)."""
    from robusteval.progress import status

    root = Path(out)
    results: dict[str, Any] = {}
    for number, part in enumerate(config.parts, 1):
        status(f"quickstart {number}/{len(config.parts)}: {TITLES[part]}")
        results[part] = _PARTS[part](root / part, backend, config, batch_size)
    return results


def tour_report(out: str | os.PathLike[str], results: dict[str, Any]) -> Path:
    """The HTML report of every part the tour ran, at ``out/report.html`` (seconds: it reads stored runs)."""
    from robusteval.report.build import build_report

    runs = [results[part]["run_dir"] for part in results]
    if "variants" in results:
        runs.append(results["variants"]["original"]["run_dir"])
    return build_report(runs, Path(out) / "report.html", title="robusteval quick-start report")


TITLES = {"matcha": "MATCHA token-level attack on 30 math word problems",
          "variants": "VAR-MATH symbolic variants of the example templates",
          "robustness": "perturbed benchmark (English character noise) on 20 yes/no questions, RB-index",
          "wordimportance": "hard-label word-importance attack on yes/no questions"}


def _matcha(out: Path, backend: Any, config: TourConfig, batch_size: int) -> dict[str, Any]:
    from robusteval.attacks.matcha.pipeline import MatchaRunConfig, attack_matcha
    from robusteval.evals.prompt_options import PromptOptions
    from robusteval.judging import JudgeOptions

    run = MatchaRunConfig(
        data=DataSpec("jsonl", sample_path("math.jsonl"), answer_type="number"), prompt=PromptOptions(exemplars="math"),
        target_answer="auto", min_correct=config.min_correct, attack_limit=config.attack_limit,
        topk_ratio=0.25, epsilon=0.005, generation=GenerationOptions(max_new_tokens=config.max_new_tokens),
        n_candidates=config.n_candidates, seed=config.seed,
        judging=JudgeOptions(judge="arith+grounding", semantic_judge="none"),
    )
    return {**attack_matcha(run, backend, out, batch_size=batch_size), "run_dir": str(out)}


def _variants(out: Path, backend: Any, config: TourConfig, batch_size: int) -> dict[str, Any]:
    """Variant instances of the example templates, and the templates' original problems (one instance each,
    the template's own values), so the report shows the accuracy drop from the original to the variants."""
    from robusteval.store import write_jsonl_atomic
    from robusteval.variants import InstantiateConfig, VariantsEvalConfig, evaluate_variants, instantiate
    from robusteval.variants.checks import original_instance
    from robusteval.variants.template import load_template_file

    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    out.mkdir(parents=True, exist_ok=True)
    instances = out / "instances.jsonl"
    instantiate(InstantiateConfig(templates, n=config.variant_instances, seed=config.seed, out=str(instances)))
    originals = [original_instance(t) for t in load_template_file(templates).templates]
    write_jsonl_atomic(out / "originals.jsonl", [o.to_json() for o in originals if o is not None])
    budget = GenerationOptions(max_new_tokens=config.variants_max_new_tokens)
    original = evaluate_variants(
        VariantsEvalConfig(str(out / "originals.jsonl"), generation=budget),
        backend, out / "original", batch_size=batch_size)
    # The originals' run is handed over so the summary's diagnosis compares each problem's variants with it.
    summary = evaluate_variants(VariantsEvalConfig(str(instances), generation=budget, original_run=str(out / "original")),
                                backend, out / "run", batch_size=batch_size)
    return {**summary, "run_dir": str(out / "run"), "original": {**original, "run_dir": str(out / "original")}}


def _robustness(out: Path, backend: Any, config: TourConfig, batch_size: int) -> dict[str, Any]:
    from robusteval.evals.robustness import RobustnessConfig, robustness
    from robusteval.perturbations.spec import PerturbationSpec

    run = RobustnessConfig(data=DataSpec("jsonl", sample_path("yesno.jsonl"), answer_type="label"),
                           perturbation=PerturbationSpec(language="en"), sets=ROBUSTNESS_SETS, seed=config.seed)
    return {**robustness(run, backend, out, batch_size=batch_size), "run_dir": str(out)}


def _wordimportance(out: Path, backend: Any, config: TourConfig, batch_size: int) -> dict[str, Any]:
    from robusteval.attacks.wordimportance.pipeline import WordImportanceRunConfig, attack_wordimportance
    from robusteval.perturbations.spec import CandidateSpec

    run = WordImportanceRunConfig(
        data=DataSpec("jsonl", sample_path("yesno.jsonl"), answer_type="label",
                      limit=config.wordimportance_examples),
        perturbation=CandidateSpec(language="en"), method="C-keyboard", rates=(0.1, 0.2, 0.3),
        budget=config.wordimportance_budget, seed=config.seed,
    )
    return {**attack_wordimportance(run, backend, out, batch_size=batch_size), "run_dir": str(out)}


_PARTS = {"matcha": _matcha, "variants": _variants, "robustness": _robustness, "wordimportance": _wordimportance}
