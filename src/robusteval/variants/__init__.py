"""Symbolic variant benchmarks (VAR-MATH): templates, a safe expression language, sampling, grading.

Modules: ``expr`` (the restricted expression language), ``template`` (native format and checks),
``varmath_csv`` (VAR-MATH CSV importer), ``sampler`` (native and ``--compat var-math`` instances),
``validate`` (originals reproduce original answers), ``evaluate`` (grading, model runs). Scores are in
:mod:`robusteval.metrics.variants`; the command line in :mod:`robusteval.cli.variants`.
"""

from robusteval.variants.expr import ExprError, evaluate, parse_expr
from robusteval.variants.sampler import CompatGenerator, Instance, instantiate, sample_native
from robusteval.variants.template import (
    Template,
    TemplateError,
    load_template_file,
    load_templates,
    parse_template,
)

__all__ = [
    "CompatGenerator",
    "ExprError",
    "Instance",
    "Template",
    "TemplateError",
    "evaluate",
    "instantiate",
    "load_template_file",
    "load_templates",
    "parse_expr",
    "parse_template",
    "sample_native",
]
