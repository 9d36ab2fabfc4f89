"""Method names -> perturbations. ``@register_perturbation`` adds one; modules are imported on first lookup.

Names follow the perturbed-benchmark convention: ``C-`` character level, ``W-`` word level, ``S-`` sentence
level. The same name may exist for both languages (``W-synonym`` is Cilin for Chinese, WordNet for English).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robusteval.errors import UserError
from robusteval.perturbations.base import Language, Level, Perturbation

# Every module that registers methods. Each imports its optional packages lazily, so listing is cheap.
_METHOD_MODULES = (
    "robusteval.perturbations.zh_char",
    "robusteval.perturbations.zh_word",
    "robusteval.perturbations.en_char",
    "robusteval.perturbations.en_word",
    "robusteval.perturbations.embedding",
    "robusteval.perturbations.maskedlm",
    "robusteval.perturbations.backtranslation",
)


@dataclass(frozen=True)
class MethodOptions:
    """Settings a method may need; each factory reads what applies and names what is missing.

    ``embedding_model``: an hf model (path/hub id/spec) whose input-embedding matrix gives neighbours.
    ``vectors``: a word-vector text file (word2vec/GloVe format) instead. ``mlm_model``: any HF fill-mask
    model. ``rerank_model``: a causal LM that re-ranks masked-LM candidates by sentence likelihood.
    ``translator``: a backend (any ``Backend``) for back-translation through ``pivot_language``.
    """

    max_candidates: int = 10
    embedding_model: str | None = None
    vectors: str | None = None
    mlm_model: str | None = None
    rerank_model: str | None = None
    translator: Any = None
    pivot_language: str = "English"
    device: str = "auto"  # for models the method loads itself (masked LM, re-ranker, translator spec)
    extra: dict[str, Any] = field(default_factory=dict)


Factory = Callable[[MethodOptions], Perturbation]


@dataclass(frozen=True)
class MethodInfo:
    name: str
    language: Language
    level: Level
    summary: str
    extra: str
    factory: Factory


_METHODS: dict[tuple[str, Language], MethodInfo] = {}


def register_perturbation(
    name: str, *, language: Language, level: Level, summary: str, extra: str
) -> Callable[[Factory], Factory]:
    """Decorator for a factory ``(MethodOptions) -> Perturbation`` registered as ``name`` for ``language``."""

    def wrap(factory: Factory) -> Factory:
        _METHODS[(name, language)] = MethodInfo(name, language, level, summary, extra, factory)
        return factory

    return wrap


def _load_all() -> None:
    for module in _METHOD_MODULES:
        importlib.import_module(module)


def available_methods(language: Language | None = None) -> list[MethodInfo]:
    _load_all()
    return sorted(
        (info for info in _METHODS.values() if language is None or info.language == language),
        key=lambda info: (info.language, info.name),
    )


def method_info(name: str, language: Language) -> MethodInfo:
    """The registration of ``name`` for ``language``; an unknown name lists the methods that exist.

    Cheap (no resource is loaded), so commands check their methods before loading a model.
    """
    _load_all()
    info = _METHODS.get((name, language))
    if info is None:
        known = ", ".join(m.name for m in available_methods(language))
        raise UserError(f"unknown perturbation method '{name}' for language '{language}'; available: {known}")
    return info


def build_perturbation(name: str, language: Language, options: MethodOptions | None = None) -> Perturbation:
    """The method ``name`` for ``language``; an unknown name lists the methods that exist."""
    return method_info(name, language).factory(options or MethodOptions())
