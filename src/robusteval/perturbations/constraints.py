"""Constraints on word substitutions, in TextAttack's sense: a candidate that breaks one is refused before it
is picked (the word's next candidate is tried; a word with none left is skipped for the next eligible word).

``keep_pos`` (:class:`PartOfSpeech`): a substitution must keep the word's part of speech.

* **Chinese**: jieba's ``posseg`` tags the original text and the text with the candidate in place; the tag of
  the span in each (a span the tagger segments differently is tagged alone, as its dictionary reads it) must
  fall in the same coarse class (:data:`ZH_CLASSES`: nouns, verbs, adjectives, adverbs, numerals ...; ``vn``
  and ``an`` count as both their classes; idioms and fixed expressions, ``i``/``l``, are a class of their own).
  学习 (v) -> 读书 (n) in 他学习物理学 is refused; 放开 (v) -> 安放 (v) is not: a part of speech is no sense.
* **English**: no offline tagger ships with any installed package (NLTK's averaged-perceptron tagger is a
  separate data download, never made here), so the parts of speech are WordNet's, context-free: the sets of
  nouns, verbs, adjectives and adverbs each word can be (its inflections included, via morphy). A candidate is
  refused when the original has a WordNet part of speech and the candidate shares none of them (run -> quickly,
  house -> the); a word WordNet does not know (a function word, a name) constrains nothing. W-synonym's
  candidates come from the original's own synsets, so this refuses none of them; it acts on W-wordembedding
  and W-maskedlm.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from robusteval.perturbations.segment import Language, Span

#: jieba tag -> coarse classes; a tag not listed is its first letter (``nr`` -> ``n``, ``vd`` -> ``v``).
ZH_CLASSES: dict[str, frozenset[str]] = {
    "vn": frozenset({"v", "n"}),  # verbal noun (学习 as in 他的学习)
    "an": frozenset({"a", "n"}),  # adjectival noun
    "ad": frozenset({"a", "d"}),  # adjective used as adverb
    "j": frozenset({"n"}),  # abbreviation (of a name, nearly always)
    "l": frozenset({"i"}),  # fixed expression: an idiom's class
    "eng": frozenset({"x"}),
}


def zh_classes(tag: str) -> frozenset[str]:
    """The coarse classes of a jieba ``posseg`` tag."""
    return ZH_CLASSES.get(tag) or frozenset({tag[:1] or "x"})


@lru_cache(maxsize=1)
def _posseg() -> Any:
    from robusteval.perturbations.segment import _jieba

    _jieba()  # loads the dictionary quietly
    return importlib.import_module("jieba.posseg")


@lru_cache(maxsize=4096)
def zh_tags(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, tag) of every word jieba's ``posseg`` finds in ``text``."""
    out = []
    start = 0
    for pair in _posseg().lcut(text):
        out.append((start, start + len(pair.word), pair.flag))
        start += len(pair.word)
    return tuple(out)


def zh_span_tag(text: str, start: int, end: int) -> str:
    """The tag of ``text[start:end]`` in context; tagged alone when the tagger segments it otherwise."""
    for a, b, tag in zh_tags(text):
        if (a, b) == (start, end):
            return tag
    alone = zh_tags(text[start:end])
    return alone[0][2] if len(alone) == 1 else "x"


@lru_cache(maxsize=65536)
def en_pos(word: str) -> frozenset[str]:
    """WordNet's parts of speech of ``word`` (``n``, ``v``, ``a``, ``r``), inflected forms included."""
    from robusteval.perturbations.en_resources import wordnet

    reader = wordnet()
    lower = word.lower()
    return frozenset(pos for pos in ("n", "v", "a", "r") if reader._morphy(lower, pos))


@dataclass
class PartOfSpeech:
    """``keep_pos``: refuses a candidate whose part of speech differs from the word it replaces."""

    language: Language
    #: Candidates refused so far (what a run reports).
    refused: int = field(default=0, compare=False)

    def allows(self, text: str, span: Span, candidate: str) -> bool:
        if self.language == "zh":
            before = zh_classes(zh_span_tag(text, span.start, span.end))
            replaced = text[: span.start] + candidate + text[span.end :]
            after = zh_classes(zh_span_tag(replaced, span.start, span.start + len(candidate)))
            return bool(before & after)
        original = en_pos(span.text)
        return not original or bool(original & en_pos(candidate))

    def filter(self, text: str, span: Span, candidates: Sequence[str]) -> list[str]:
        kept = [candidate for candidate in candidates if self.allows(text, span, candidate)]
        self.refused += len(candidates) - len(kept)
        return kept
