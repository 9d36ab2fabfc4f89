"""Method names -> perturbations. ``@register_perturbation`` adds one; modules are imported on first lookup.

Names follow the perturbed-benchmark convention: ``C-`` character level, ``W-`` word level, ``S-`` sentence
level. The same name may exist for both languages (``W-synonym`` is Cilin for Chinese, WordNet for English).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robusteval.config import did_you_mean
from robusteval.errors import UserError
from robusteval.perturbations.base import Language, Level, Perturbation
from robusteval.registry import Entry, Registry

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


#: Defaults a run's CandidateSpec (perturbations.spec) and a method built directly share: candidates per span, and
#: back-translation's pivot language.
MAX_CANDIDATES = 10
PIVOT_LANGUAGE = "English"


@dataclass(frozen=True)
class MethodOptions:
    """Settings a method may need; each factory reads what applies and names what is missing.

    ``embedding_model``: an hf model (path/hub id/spec) whose input-embedding matrix gives neighbours.
    ``vectors``: a word-vector text file (word2vec/GloVe format) instead. ``mlm_model``: any HF fill-mask
    model. ``rerank_model``: a causal LM that re-ranks masked-LM candidates by sentence likelihood.
    ``translator``: a backend (any ``Backend``) for back-translation through ``pivot_language``.
    ``min_similarity``: word substitutions and back-translations less similar to the original are refused
    (:mod:`robusteval.perturbations.similarity`, every word- and sentence-level method; None: no gate).
    """

    max_candidates: int = MAX_CANDIDATES
    embedding_model: str | None = None
    vectors: str | None = None
    mlm_model: str | None = None
    rerank_model: str | None = None
    translator: Any = None
    pivot_language: str = PIVOT_LANGUAGE
    min_similarity: float | None = None
    keep_pos: bool = False  # word-level methods: refuse a candidate of another part of speech (constraints.py)
    one_sense: bool = False  # W-synonym: only words with one sense to choose from (zh_word.py, en_word.py)
    bare_strokes: bool = True  # C-radical: splits with a bare stroke among the components are offered too
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


#: One entry per (method name, language): ``W-synonym`` is Cilin for Chinese and WordNet for English.
PERTURBATIONS: Registry[Factory] = Registry("perturbation method", modules=_METHOD_MODULES,
                                            entry_points="robusteval.perturbations")


def register_perturbation(
    name: str, *, language: Language, level: Level, summary: str, extra: str
) -> Callable[[Factory], Factory]:
    """Decorator for a factory ``(MethodOptions) -> Perturbation`` registered as ``name`` for ``language``."""
    return PERTURBATIONS.register(name, summary=summary, extra=extra, key=(name, language), language=language,
                                  level=level)


def _info(entry: Entry[Factory]) -> MethodInfo:
    return MethodInfo(entry.name, entry.meta["language"], entry.meta["level"], entry.summary, entry.extra or "",
                      entry.value)


def available_methods(language: Language | None = None) -> list[MethodInfo]:
    return sorted(
        (_info(e) for e in PERTURBATIONS.entries() if language is None or e.meta["language"] == language),
        key=lambda info: (info.language, info.name),
    )


def check_method_name(name: str, *, extra: tuple[str, ...] = ()) -> None:
    """Refuse a name no language registers (configs check it when built, before the language is known)."""
    known = sorted({m.name for m in available_methods()} | set(extra))
    if name not in known:
        raise UserError(f"unknown perturbation method {name!r}{did_you_mean(name, known)}; available: "
                        f"{', '.join(known)}")


def method_info(name: str, language: Language) -> MethodInfo:
    """The registration of ``name`` for ``language``; an unknown name lists the methods that exist.

    Cheap (no resource is loaded), so commands check their methods before loading a model.
    """
    entry = PERTURBATIONS.find((name, language))
    info = _info(entry) if entry is not None else None
    if info is None:
        known = [m.name for m in available_methods(language)]
        elsewhere = sorted(m.language for m in available_methods() if m.name == name)
        if elsewhere:
            raise UserError(f"perturbation method '{name}' perturbs {'/'.join(elsewhere)} text, and these texts are "
                            f"{language}; methods for {language}: {', '.join(known)}")
        raise UserError(f"unknown perturbation method '{name}' for language '{language}'"
                        f"{did_you_mean(name, known)}; available: {', '.join(known)}")
    return info


def similarity_applies(name: str) -> bool:
    """Whether ``min_similarity`` gates the method ``name`` (word and sentence level, in any language)."""
    from robusteval.perturbations.similarity import GATED_LEVELS

    return any(m.name == name and m.level in GATED_LEVELS for m in available_methods())


def pos_applies(name: str) -> bool:
    """Whether ``keep_pos`` constrains the method ``name`` (word level, in any language)."""
    return any(m.name == name and m.level == "word" for m in available_methods())


def build_perturbation(name: str, language: Language, options: MethodOptions | None = None) -> Perturbation:
    """The method ``name`` for ``language``; an unknown name lists the methods that exist. With
    ``options.min_similarity`` a word- or sentence-level method gets the language's similarity gate; with
    ``options.keep_pos`` a word-level one the part-of-speech constraint."""
    options = options or MethodOptions()
    info = method_info(name, language)
    perturbation: Any = info.factory(options)  # Any: ``gate`` is an attribute of the gated classes only
    if options.keep_pos and info.level == "word" and hasattr(perturbation, "constraint"):
        from robusteval.perturbations.constraints import PartOfSpeech

        perturbation.constraint = PartOfSpeech(language)
    if options.min_similarity is not None and hasattr(perturbation, "gate"):
        from robusteval.perturbations.similarity import GATED_LEVELS, SimilarityGate

        if info.level in GATED_LEVELS:
            perturbation.gate = SimilarityGate(options.min_similarity, language, device=options.device)
    return perturbation
