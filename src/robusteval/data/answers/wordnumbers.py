"""Spelled-out whole numbers: "five", "twenty-one", "one hundred and five", "two thousand and twenty-four",
"minus seven". Read by a small grammar, not by a word list, so "five five" is one number (5) followed by
another, never 10 or 55.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNIT_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_WORD_UNITS = {w: i for i, w in enumerate(_UNIT_WORDS)}
_WORD_TENS = {
    w: 10 * i
    for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 2)
}
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
NUMBER_WORDS = frozenset((*_WORD_UNITS, *_WORD_TENS, "hundred", *SCALES))
_NEGATIVE_WORDS = ("minus", "negative")

# Fraction and arithmetic words: after a number they change its meaning ("one half", "five times ten",
# "three point five"), so a grader must not read them as a unit the way it reads "five apples".
FRACTION_WORDS = frozenset(
    ("half", "halves", "third", "thirds", "quarter", "quarters", "fourth", "fourths", "fifth", "fifths", "sixth",
     "sixths", "seventh", "sevenths", "eighth", "eighths", "ninth", "ninths", "tenth", "tenths", "hundredth",
     "hundredths", "thousandth", "thousandths")
)  # fmt: skip
ARITHMETIC_WORDS = frozenset(("times", "plus", "minus", "over", "divided", "point", "squared", "cubed"))

_ANY_WORD = "|".join(sorted((*NUMBER_WORDS, "and", "a"), key=len, reverse=True))
# A run of candidate words ("a" and "and" only inside, checked by the grammar below); hyphens join
# "twenty-one".
_RUN_RE = re.compile(
    rf"\b(?:(?P<neg>{'|'.join(_NEGATIVE_WORDS)})\s+)?(?P<run>(?:{_ANY_WORD})(?:(?:\s+|-)(?:{_ANY_WORD}))*)\b",
    re.IGNORECASE,
)
_SPLIT_RE = re.compile(r"\s+|-")


@dataclass(frozen=True)
class WordNumber:
    """A spelled-out number found in text: its value and where it stands (``text[start:end]``)."""

    value: int
    start: int
    end: int  # just past the last word that belongs to the number


def _read_run(words: list[str]) -> tuple[int, int] | None:
    """(value, number of words used) of the longest grammatical prefix of ``words``; None if none."""
    total, group = 0, 0  # group: the part below the last scale word ("... thousand" + group)
    last = ""  # kind of the last word: unit, teen, tens, hundred, scale, and, a
    last_scale = None
    used = 0
    value_at_used = None
    hundred_in_group = False
    for i, raw in enumerate(words):
        word = raw.lower()
        if word == "a":
            if i != 0:
                break
            last = "a"
            continue
        if word == "and":
            if last not in ("hundred", "scale"):
                break
            last = "and"
            continue
        if word in _WORD_UNITS:
            n = _WORD_UNITS[word]
            kind = "unit" if 0 < n < 10 else "teen"
            if n == 0 and (i or (len(words) > 1 and words[1].lower() in NUMBER_WORDS)):
                break  # "zero" stands alone
            if last in ("unit", "teen", "a") or (last == "tens" and kind == "teen"):
                break
            group += n  # after "twenty" this is "twenty-one"; the checks above exclude "twenty-eleven"
            last = kind
        elif word in _WORD_TENS:
            if last in ("unit", "teen", "tens", "a"):
                break
            group += _WORD_TENS[word]
            last = "tens"
        elif word == "hundred":
            if hundred_in_group or last not in ("unit", "teen", "tens", "a") or (last == "tens" and group % 10):
                break
            group = (group or 1) * 100
            hundred_in_group = True
            last = "hundred"
        else:  # a scale word
            scale = SCALES[word]
            if last not in ("unit", "teen", "tens", "hundred", "a") or (last_scale is not None and scale >= last_scale):
                break
            total += (group or 1) * scale
            group, hundred_in_group, last_scale = 0, False, scale
            last = "scale"
        used, value_at_used = i + 1, total + group
    if value_at_used is None:
        return None
    return value_at_used, used


def find_word_number(text: str, start: int = 0, *, anchored: bool = False) -> WordNumber | None:
    """The first spelled-out whole number in ``text`` from ``start`` ("at ``start``" if ``anchored``)."""
    pos = start
    while True:
        m = _RUN_RE.match(text, pos) if anchored else _RUN_RE.search(text, pos)
        if m is None:
            return None
        run = m.group("run")
        words = [w for w in _SPLIT_RE.split(run) if w]
        read = _read_run(words)
        if read is not None:
            value, used = read
            last_word = list(re.finditer(r"[A-Za-z]+", run))[used - 1]
            end = m.start("run") + last_word.end()
            return WordNumber(-value if m.group("neg") else value, m.start(), end)
        if anchored:
            return None
        pos = m.start("run") + len(words[0])  # "and five", "a five": a number may start at the next word
