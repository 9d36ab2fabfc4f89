"""Symbolic variant benchmarks (VAR-MATH): templates, a safe expression language, sampling, grading.

The pipelines, each from a typed config (``robusteval variants …`` is a thin shell over them)::

    from robusteval import variants

    made = variants.instantiate(variants.InstantiateConfig("templates.yaml", n=5, out="instances.jsonl"))
    report = variants.validate(variants.ValidateConfig("templates.yaml"))
    drafts = variants.draft(variants.DraftConfig(data_file="problems.jsonl", out="drafts.yaml"))
    checked = variants.check(variants.CheckConfig(["drafts.yaml"]))   # validate + the deep checks
    summary = variants.evaluate_variants(variants.VariantsEvalConfig("instances.jsonl"), backend, "runs/var")
    scores, graded = variants.score("instances.jsonl", "predictions.jsonl")

Modules: ``configs`` and ``pipeline`` (the above), ``expr`` (the restricted expression language), ``template``
(native format and checks), ``varmath_csv`` (VAR-MATH CSV importer), ``sampler`` (native and
``--compat var-math`` instances), ``checks`` (originals reproduce original answers), ``grading`` (instances
and predictions files, grading); template authoring: ``authoring`` (the draft and check pipelines), ``numbers``
(the numbers of a problem text), ``drafting`` (a draft template of a problem), ``lint`` (check's deep checks). Scores are in :mod:`robusteval.metrics.variants`.

Names are imported on first use, so the command line reads the configs without loading the sampler or grader;
nothing here imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> (module, attribute); resolved on first use.
_EXPORTS: dict[str, tuple[str, str]] = {
    # configs
    "GradingConfig": ("configs", "GradingConfig"),
    "ImportConfig": ("configs", "ImportConfig"),
    "InstantiateConfig": ("configs", "InstantiateConfig"),
    "ScoreConfig": ("configs", "ScoreConfig"),
    "ValidateConfig": ("configs", "ValidateConfig"),
    "DraftConfig": ("configs", "DraftConfig"),
    "CheckConfig": ("configs", "CheckConfig"),
    "VariantsEvalConfig": ("configs", "VariantsEvalConfig"),
    # pipelines and what they return
    "instantiate": ("pipeline", "instantiate"),
    "InstantiateResult": ("pipeline", "InstantiateResult"),
    "validate": ("pipeline", "validate"),
    "ValidationReport": ("pipeline", "ValidationReport"),
    "evaluate_variants": ("pipeline", "evaluate_variants"),
    "variants_eval_identity": ("pipeline", "variants_eval_identity"),
    "VariantsEvalSummary": ("pipeline", "VariantsEvalSummary"),
    "score": ("pipeline", "score"),
    "score_files": ("pipeline", "score_files"),
    "ScoreReport": ("pipeline", "ScoreReport"),
    "VariantScores": ("pipeline", "VariantScores"),
    "import_templates": ("pipeline", "import_templates"),
    "ImportReport": ("pipeline", "ImportReport"),
    "MATH_PROMPT": ("pipeline", "MATH_PROMPT"),
    "draft": ("authoring", "draft"),
    "DraftReport": ("authoring", "DraftReport"),
    "check": ("authoring", "check"),
    "CheckReport": ("authoring", "CheckReport"),
    # building blocks
    "VariantInstance": ("grading", "VariantInstance"),
    "grade": ("grading", "grade"),
    "load_instances": ("grading", "load_instances"),
    "load_predictions": ("grading", "load_predictions"),
    "Check": ("checks", "Check"),
    "Finding": ("lint", "Finding"),
    "draft_template": ("drafting", "draft_template"),
    "drafts_yaml": ("drafting", "drafts_yaml"),
    "TemplateDraft": ("drafting", "TemplateDraft"),
    "find_numbers": ("numbers", "find_numbers"),
    "CompatGenerator": ("sampler", "CompatGenerator"),
    "Instance": ("sampler", "Instance"),
    "sample_native": ("sampler", "sample_native"),
    "instantiate_templates": ("sampler", "instantiate"),  # templates -> instances, no files
    "ExprError": ("expr", "ExprError"),
    "parse_expr": ("expr", "parse_expr"),
    "evaluate_expr": ("expr", "evaluate"),
    "Template": ("template", "Template"),
    "TemplateError": ("template", "TemplateError"),
    "load_template_file": ("template", "load_template_file"),
    "load_templates": ("template", "load_templates"),
    "parse_template": ("template", "parse_template"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
