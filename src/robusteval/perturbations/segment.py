"""Word segmentation with character offsets: jieba for Chinese, a regex word tokenizer for English; and the
:class:`Span` (offsets + text) that segmentation gives and every perturbation edits (re-exported by ``base``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from robusteval.extras import require_module

Language = Literal["zh", "en"]


@dataclass(frozen=True)
class Span:
    """``text[start:end]``: one character or word that a perturbation may replace."""

    start: int
    end: int
    text: str


_EN_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|\d+(?:[.,]\d+)*|[^\sA-Za-z\d]")


@lru_cache(maxsize=1)
def _jieba() -> Any:
    jieba = require_module("jieba", "zh", purpose="Chinese word segmentation")
    import logging

    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading banner is not our output
    jieba.initialize()
    return jieba


def segment_words(text: str, language: Language) -> list[Span]:
    """Every word of ``text`` with offsets; whitespace is dropped, punctuation marks are their own words."""
    if language == "zh":
        return [Span(start, end, word) for word, start, end in _jieba().tokenize(text) if word.strip()]
    return [Span(m.start(), m.end(), m.group()) for m in _EN_WORD.finditer(text)]


def is_word(span: Span) -> bool:
    """True for spans worth perturbing: at least one letter or ideograph (not punctuation or a number)."""
    return any(char.isalpha() for char in span.text)
