"""Real runs of every method on the tiny models, for the report tests (built once per session).

* ``matcha``: the token attack on the 30 bundled math questions (seed 0, 40 new tokens): the trained tiny model
  gives UR, SR and WR outcomes there (one success, a false equation the arithmetic checker names);
* ``transfer``: that success replayed on a second tiny model; ``sweep``: MATCHA's random-insertion baseline
  beside the full attack over two seeds (Table 3);
* ``variants`` and ``original``: VAR-MATH variants of the example templates and the templates' own problems
  (``variants-other``: the variants on the second model);
* ``robustness`` and ``wi-*``: the tiny Chinese NLI classifier on perturbed sets and under the hard-label attack
  with two methods, and ``ors`` from those attacks.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from helpers.datafiles import write_ocnli
from robusteval.attacks.matcha.pipeline import MatchaRunConfig, attack_matcha
from robusteval.attacks.matcha.transfer import TransferConfig, transfer
from robusteval.attacks.wordimportance import WordImportanceRunConfig, attack_wordimportance
from robusteval.attacks.wordimportance.ors import OrsConfig, ors
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.robustness import RobustnessConfig, robustness
from robusteval.judging import JudgeOptions
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.perturbations.spec import CandidateSpec, PerturbationSpec
from robusteval.store import write_jsonl_atomic
from robusteval.studies.sweep import sweep
from robusteval.tour import sample_path
from robusteval.variants import InstantiateConfig, VariantsEvalConfig, evaluate_variants, instantiate
from robusteval.variants.checks import original_instance
from robusteval.variants.template import load_template_file

NLI_METHODS = ("C-homophone", "C-pinyin")


def math_data(limit: int | None = None) -> DataSpec:
    return DataSpec("jsonl", sample_path("math.jsonl"), answer_type="number", limit=limit)


def matcha_config(**overrides: object) -> MatchaRunConfig:
    values: dict[str, object] = {"data": math_data(), "prompt": PromptOptions(exemplars="math"),
                                 "target_answer": "clean", "generation": GenerationOptions(max_new_tokens=40),
                                 "judging": JudgeOptions(judge="arith"), "seed": 0}
    values.update(overrides)
    return MatchaRunConfig(**values)  # type: ignore[arg-type]


def make_llm_runs(root: Path, trained_dir: Path, other_dir: Path) -> dict[str, Path]:
    """MATCHA, transfer, a baseline sweep and VAR-MATH on the tiny Llamas; returns name -> directory."""
    model = load_backend(f"hf:{trained_dir}")
    runs = {"matcha": root / "matcha", "transfer": root / "transfer", "sweep": root / "sweep",
            "variants": root / "varmath" / "run", "original": root / "varmath" / "original"}
    attack_matcha(matcha_config(), model, runs["matcha"])
    transfer(TransferConfig(source=str(runs["matcha"]), generation=GenerationOptions(max_new_tokens=24)),
             load_backend(f"hf:{other_dir}"), runs["transfer"])
    sweep("matcha", matcha_config(data=math_data(6), generation=GenerationOptions(max_new_tokens=24)),
          runs["sweep"],
          grid={"variant": ["full", "random-insert"]}, seeds=(0, 1), backend=model)
    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    instances, originals = root / "varmath" / "instances.jsonl", root / "varmath" / "originals.jsonl"
    instantiate(InstantiateConfig(templates, n=2, seed=0, out=str(instances)))
    rows = [original_instance(t) for t in load_template_file(templates).templates]
    write_jsonl_atomic(originals, [r.to_json() for r in rows if r is not None])
    evaluate_variants(VariantsEvalConfig(str(instances), generation=GenerationOptions(max_new_tokens=16)),
                      model, runs["variants"])
    evaluate_variants(VariantsEvalConfig(str(originals), generation=GenerationOptions(max_new_tokens=16)),
                      model, runs["original"])
    # A second model on the same variants: the VAR-MATH leaderboard ranks two models.
    runs["variants-other"] = root / "varmath" / "other"
    evaluate_variants(VariantsEvalConfig(str(instances), generation=GenerationOptions(max_new_tokens=16)),
                      load_backend(f"hf:{other_dir}"),
             runs["variants-other"])
    return runs


def make_nli_runs(root: Path, nli_dir: Path) -> dict[str, Path]:
    """Perturbed sets, two hard-label attacks and ORS on the tiny NLI classifier (needs the zh extra)."""
    model = load_backend(f"hf:{nli_dir}")
    template = str(nli_dir / "template.json")
    data = DataSpec("ocnli", str(write_ocnli(root / "ocnli.json", tiny_nli_pairs(12, seed=5))))
    runs = {"robustness": root / "robustness", "ors": root / "ors"}
    robustness(RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets=NLI_METHODS,
                                prompt=PromptOptions(template=template),
                                seed=0), model, runs["robustness"])
    for method in NLI_METHODS:
        runs[f"wi-{method}"] = root / f"wi-{method}"
        attack_wordimportance(WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method=method,
                                                      rates="0.1,0.2,0.3", budget=40,
                                                      prompt=PromptOptions(template=template), seed=3),
                              model, runs[f"wi-{method}"])
    ors(OrsConfig(tuple(str(runs[f"wi-{m}"]) for m in NLI_METHODS), out=str(runs["ors"])))
    return runs
