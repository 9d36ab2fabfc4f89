"""English character-level noise: keyboard typos, OCR confusions, and swapped/inserted/deleted/shuffled letters.

The unit is a word, and each edit changes it minimally (one letter replaced, inserted or deleted, one pair
swapped, the inner letters shuffled): several typos inside one short word ("much" -> "jhch") would make it
unrecognisable rather than noisy. Only alphabetic words change: numbers, punctuation and letters glued to a
digit ("5th", "3x", "10km") stay as they are, so a maths question keeps its quantities and units.

The default budget follows the perturbed-benchmark convention of 3–15 changed characters per text:
``ChangeBudget(rate=0.1, minimum=3, maximum=15)`` over the eligible words for the one-character edits
(keyboard, OCR, insert, delete); ``C-swap`` changes two characters per word, so 2–7 words; ``C-shuffle``
two or more, so 2–3 words.

Word candidates are interleaved across positions in an rng-drawn order, so the first few (the base caps
them at ``max_candidates``) already differ in where they change the word.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from robusteval.perturbations.base import (
    CHAR_BUDGET,
    ChangeBudget,
    Language,
    Level,
    Perturbation,
    Span,
    SpanPerturbation,
)
from robusteval.perturbations.en_resources import OCR_CONFUSIONS, OCR_MULTI
from robusteval.perturbations.keyboard import QWERTY_NEIGHBOURS_BY_POSITION
from robusteval.perturbations.registry import MethodOptions, register_perturbation

#: 3–15 changed characters per text, one changed character per word.
#: A swap changes two characters: 2–7 words keeps a text within 4–14 changed characters.
SWAP_BUDGET = ChangeBudget(rate=0.05, minimum=2, maximum=7)
#: A shuffle changes two or more characters (``len - 2`` at most): 2–3 words.
SHUFFLE_BUDGET = ChangeBudget(rate=0.05, minimum=2, maximum=3)


# The same tokens as ``segment_words(text, "en")`` yields for words, minus those touching a letter or digit
# outside ASCII words: "5th" -> "5" + "th" and "café" -> "caf" + "é" are fragments, not words to misspell.
# Atomic group: a word that fails the right-hand check is not retried shorter ("it's5" gives nothing).
_LETTER_WORD = re.compile(r"(?<![^\W_])(?>[A-Za-z]+(?:['’][A-Za-z]+)*)(?![^\W_])")


def letter_words(text: str) -> list[Span]:
    """Words of ASCII letters (apostrophes inside allowed) that do not touch a digit or another letter."""
    return [Span(m.start(), m.end(), m.group()) for m in _LETTER_WORD.finditer(text)]


def _letters(word: str) -> int:
    return len(word) - word.count("'") - word.count("’")


def _case_table(lower: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Add upper-case keys whose replacements are upper-cased too ("G" -> "T", "Y", ...)."""
    table = dict(lower)
    table.update({k.upper(): tuple(r.upper() for r in v) for k, v in lower.items()})
    return table


#: Letter -> the keys around it, in both cases (neighbours in key-position order: the rng draws depend on it).
_KEYBOARD = _case_table({c: tuple(near) for c, near in QWERTY_NEIGHBOURS_BY_POSITION.items()})
#: Letter -> itself with a neighbouring key pressed just after or just before it.
_INSERT = _case_table(
    {c: tuple(x for n in near for x in (c + n, n + c)) for c, near in QWERTY_NEIGHBOURS_BY_POSITION.items()}
)


def _interleave(word: str, edits: list[tuple[int, int, Sequence[str]]], rng: random.Random, limit: int) -> list[str]:
    """Variants of ``word`` from ``(start, end, replacements)`` edits, round-robin over the edits in an
    rng-drawn order (the first variants change different positions), stopping after ``limit``."""
    rng.shuffle(edits)
    out: list[str] = []
    depth = max((len(r) for _, _, r in edits), default=0)
    for k in range(depth):
        for start, end, replacements in edits:
            if k < len(replacements):
                out.append(word[:start] + replacements[k] + word[end:])
                if len(out) >= limit:
                    return out
    return out


@dataclass
class _EnglishChar(SpanPerturbation):
    """Shared English character-level behaviour: word units, position-interleaved word candidates."""

    level: ClassVar[Level] = "char"
    language: ClassVar[Language] = "en"
    default_budget: ClassVar[ChangeBudget] = CHAR_BUDGET
    #: Shortest word (in letters) the method changes.
    min_letters: ClassVar[int] = 1
    #: Letter -> replacements (the method's table); ``char_candidates`` reads it.
    table: ClassVar[dict[str, tuple[str, ...]]] = {}

    def units(self, text: str) -> list[Span]:
        """Alphabetic words with at least ``min_letters`` letters: one edit per word."""
        words = letter_words(text)
        if self.min_letters <= 1:
            return words
        return [w for w in words if _letters(w.text) >= self.min_letters]

    def char_candidates(self, char: str) -> Sequence[str]:
        return self.table.get(char, ())

    def _edits(self, word: str) -> list[tuple[int, int, Sequence[str]]]:
        table = self.table
        return [(i, i + 1, table[c]) for i, c in enumerate(word) if c in table]

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        # Twice the cap: the base drops duplicates and the original before cutting to max_candidates.
        return _interleave(word, self._edits(word), rng, 2 * self.max_candidates)


@dataclass
class KeyboardTypo(_EnglishChar):
    """A letter replaced by a neighbouring QWERTY key, in the same case: the commonest real typo."""

    name: ClassVar[str] = "C-keyboard"
    table: ClassVar[dict[str, tuple[str, ...]]] = _KEYBOARD


@dataclass
class KeyboardInsert(_EnglishChar):
    """A neighbouring key pressed together with the intended one: a letter inserted before or after it."""

    name: ClassVar[str] = "C-insert"
    table: ClassVar[dict[str, tuple[str, ...]]] = _INSERT


@dataclass
class OcrConfusion(_EnglishChar):
    """Letters an OCR engine (or a quick reader) confuses: l/I, e/c, h/b, rn/m, cl/d, vv/w. Never a digit."""

    name: ClassVar[str] = "C-ocr"
    table: ClassVar[dict[str, tuple[str, ...]]] = {k: v for k, v in OCR_CONFUSIONS.items() if len(k) == 1}

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        """Multi-letter confusions ("rn" -> "m") first, then one-letter ones, each across positions."""
        multi: list[tuple[int, int, Sequence[str]]] = []
        for source in OCR_MULTI:
            start = word.find(source)
            while start != -1:
                multi.append((start, start + len(source), OCR_CONFUSIONS[source]))
                start = word.find(source, start + 1)
        limit = 2 * self.max_candidates
        out = _interleave(word, multi, rng, limit) if multi else []
        return out + _interleave(word, self._edits(word), rng, limit - len(out))


@dataclass
class Morphonym(OcrConfusion):
    """``C-morphonym`` for English: visually similar letters, the same table as ``C-ocr``."""

    name: ClassVar[str] = "C-morphonym"


@dataclass
class AdjacentSwap(_EnglishChar):
    """Two adjacent letters of a word swapped ("form" -> "from"): a typing-order slip."""

    name: ClassVar[str] = "C-swap"
    default_budget: ClassVar[ChangeBudget] = SWAP_BUDGET
    min_letters: ClassVar[int] = 2

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        return [
            word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            for i in range(len(word) - 1)
            if word[i] != word[i + 1] and word[i].isalpha() and word[i + 1].isalpha()
        ]


@dataclass
class LetterDelete(_EnglishChar):
    """One letter dropped from a word of three or more letters, never the first: readers anchor on it, and
    dropping it mostly makes another word ("She" -> "he", "than" -> "han")."""

    name: ClassVar[str] = "C-delete"
    min_letters: ClassVar[int] = 3

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if _letters(word) < self.min_letters:
            return []
        return [word[:i] + word[i + 1 :] for i in range(1, len(word)) if word[i].isalpha()]


@dataclass
class InnerShuffle(_EnglishChar):
    """The inner letters of a word of four or more letters shuffled, first and last kept (still readable)."""

    name: ClassVar[str] = "C-shuffle"
    default_budget: ClassVar[ChangeBudget] = SHUFFLE_BUDGET
    min_letters: ClassVar[int] = 4

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if len(word) < self.min_letters or not word.isalpha():
            return []
        first, inner, last = word[0], word[1:-1], word[-1]
        if len(set(inner)) < 2:
            return []
        if len(inner) <= 4:  # at most 24 orders: list them all, then draw the order
            orders = sorted({"".join(p) for p in itertools.permutations(inner)} - {inner})
            rng.shuffle(orders)
        else:
            seen: set[str] = {inner}
            orders = []
            letters = list(inner)
            for _ in range(4 * self.max_candidates):
                rng.shuffle(letters)
                candidate = "".join(letters)
                if candidate not in seen:
                    seen.add(candidate)
                    orders.append(candidate)
                    if len(orders) >= self.max_candidates:
                        break
        return [first + middle + last for middle in orders]


# -- registration ----------------------------------------------------------------------------------------

_NO_EXTRA = ""  # these need no optional package


@register_perturbation("C-keyboard", language="en", level="char", extra=_NO_EXTRA,
                       summary="a letter replaced by a neighbouring QWERTY key (case kept)")
def _keyboard(options: MethodOptions) -> Perturbation:
    return KeyboardTypo(max_candidates=options.max_candidates)


@register_perturbation("C-ocr", language="en", level="char", extra=_NO_EXTRA,
                       summary="OCR-style letter confusions: l/I, e/c, h/b, rn/m, cl/d, vv/w (never digits)")
def _ocr(options: MethodOptions) -> Perturbation:
    return OcrConfusion(max_candidates=options.max_candidates)


@register_perturbation("C-morphonym", language="en", level="char", extra=_NO_EXTRA,
                       summary="visually similar letters (the C-ocr table)")
def _morphonym(options: MethodOptions) -> Perturbation:
    return Morphonym(max_candidates=options.max_candidates)


@register_perturbation("C-swap", language="en", level="char", extra=_NO_EXTRA,
                       summary="two adjacent letters of a word swapped")
def _swap(options: MethodOptions) -> Perturbation:
    return AdjacentSwap(max_candidates=options.max_candidates)


@register_perturbation("C-insert", language="en", level="char", extra=_NO_EXTRA,
                       summary="a neighbouring-key letter inserted next to a letter")
def _insert(options: MethodOptions) -> Perturbation:
    return KeyboardInsert(max_candidates=options.max_candidates)


@register_perturbation("C-delete", language="en", level="char", extra=_NO_EXTRA,
                       summary="one letter deleted from a word of 3+ letters")
def _delete(options: MethodOptions) -> Perturbation:
    return LetterDelete(max_candidates=options.max_candidates)


@register_perturbation("C-shuffle", language="en", level="char", extra=_NO_EXTRA,
                       summary="inner letters of a 4+ letter word shuffled, first and last kept")
def _shuffle(options: MethodOptions) -> Perturbation:
    return InnerShuffle(max_candidates=options.max_candidates)
