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
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    # What type checkers see: every name of _EXPORTS, imported eagerly (``X as X`` re-exports it); at run time
    # they resolve lazily through __getattr__ below. tests/test_public_types.py keeps this block and _EXPORTS
    # equal.
    from robusteval.variants.authoring import CheckReport as CheckReport
    from robusteval.variants.authoring import DraftReport as DraftReport
    from robusteval.variants.authoring import check as check
    from robusteval.variants.authoring import draft as draft
    from robusteval.variants.checks import Check as Check
    from robusteval.variants.configs import CheckConfig as CheckConfig
    from robusteval.variants.configs import DraftConfig as DraftConfig
    from robusteval.variants.configs import GradingConfig as GradingConfig
    from robusteval.variants.configs import ImportConfig as ImportConfig
    from robusteval.variants.configs import InstantiateConfig as InstantiateConfig
    from robusteval.variants.configs import ScoreConfig as ScoreConfig
    from robusteval.variants.configs import ValidateConfig as ValidateConfig
    from robusteval.variants.configs import VariantsEvalConfig as VariantsEvalConfig
    from robusteval.variants.drafting import TemplateDraft as TemplateDraft
    from robusteval.variants.drafting import draft_template as draft_template
    from robusteval.variants.drafting import drafts_yaml as drafts_yaml
    from robusteval.variants.expr import ExprError as ExprError
    from robusteval.variants.expr import evaluate as _evaluate_expr
    from robusteval.variants.expr import parse_expr as parse_expr
    from robusteval.variants.grading import VariantInstance as VariantInstance
    from robusteval.variants.grading import grade as grade
    from robusteval.variants.grading import load_instances as load_instances
    from robusteval.variants.grading import load_predictions as load_predictions
    from robusteval.variants.lint import Finding as Finding
    from robusteval.variants.numbers import find_numbers as find_numbers
    from robusteval.variants.pipeline import MATH_PROMPT as MATH_PROMPT
    from robusteval.variants.pipeline import ImportReport as ImportReport
    from robusteval.variants.pipeline import InstantiateResult as InstantiateResult
    from robusteval.variants.pipeline import ScoreReport as ScoreReport
    from robusteval.variants.pipeline import ValidationReport as ValidationReport
    from robusteval.variants.pipeline import VariantScores as VariantScores
    from robusteval.variants.pipeline import VariantsEvalSummary as VariantsEvalSummary
    from robusteval.variants.pipeline import evaluate_variants as evaluate_variants
    from robusteval.variants.pipeline import import_templates as import_templates
    from robusteval.variants.pipeline import instantiate as instantiate
    from robusteval.variants.pipeline import score as score
    from robusteval.variants.pipeline import score_files as score_files
    from robusteval.variants.pipeline import validate as validate
    from robusteval.variants.pipeline import variants_eval_identity as variants_eval_identity
    from robusteval.variants.sampler import CompatGenerator as CompatGenerator
    from robusteval.variants.sampler import Instance as Instance
    from robusteval.variants.sampler import instantiate as _instantiate_templates
    from robusteval.variants.sampler import sample_native as sample_native
    from robusteval.variants.template import Template as Template
    from robusteval.variants.template import TemplateError as TemplateError
    from robusteval.variants.template import load_template_file as load_template_file
    from robusteval.variants.template import load_templates as load_templates
    from robusteval.variants.template import parse_template as parse_template

    # Exported under another name than the module's: assigned, so a strict checker sees them exported too.
    evaluate_expr = _evaluate_expr
    instantiate_templates = _instantiate_templates

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
