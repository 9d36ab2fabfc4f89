"""Perturbations: character-, word- and sentence-level noise for Chinese and English texts.

Where things go: the interface and shared machinery in ``base.py``; one module per family of methods
(``zh_char``, ``zh_word``, ``en_char``, ``en_word``, ``embedding``, ``maskedlm``, ``backtranslation``), each
registering its methods with ``@register_perturbation``; whole datasets in ``dataset.py``.
"""

from robusteval.perturbations.base import (
    ChangeBudget,
    Edit,
    Perturbation,
    Perturbed,
    Protection,
    Span,
    SpanPerturbation,
    apply_edits,
    detect_language,
)
from robusteval.perturbations.registry import (
    MethodInfo,
    MethodOptions,
    available_methods,
    build_perturbation,
    register_perturbation,
)

__all__ = [
    "ChangeBudget",
    "Edit",
    "MethodInfo",
    "MethodOptions",
    "Perturbation",
    "Perturbed",
    "Protection",
    "Span",
    "SpanPerturbation",
    "apply_edits",
    "available_methods",
    "build_perturbation",
    "detect_language",
    "register_perturbation",
]
