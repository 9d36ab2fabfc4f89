"""Numbers in answers: finding them in free text ("$1,234.50", "-\\frac{3}{4}", "2 1/2", "50%", "eighteen"),
reading a whole answer as one number, and comparing two numbers the way a grader would.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from robusteval.data.answers.markup import _prep_full, _strip_markup
from robusteval.data.answers.wordnumbers import (
    ARITHMETIC_WORDS,
    FRACTION_WORDS,
    NUMBER_WORDS,
    SCALES,
    WordNumber,
    find_word_number,
)

_UINT = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)"  # "1,234,567" is one number only with exact 3-digit groups
_UDEC = rf"(?:{_UINT}(?:\.\d+)?|\.\d+)"  # "18." does not take the period: it usually ends a sentence

# Sign and currency in either order ("-$5", "$-5", "\$18"); the lookbehind keeps "x-3" and "v2" from
# yielding -3 and 2, and keeps us from starting inside "3.14".
_HEAD_RE = re.compile(r"(?<![\w.])(?P<s1>[-+])?(?:(?P<cur>\\?\$|[€£¥])\s?)?(?P<s2>[-+])?(?=[\d.\\])")
_UDEC_RE = re.compile(_UDEC)
_LATEX_FRAC_RE = re.compile(
    rf"\\[dtc]?frac\s*(?:\{{\s*(?P<n>[-+]?{_UDEC})\s*\}}|(?P<n1>\d))\s*(?:\{{\s*(?P<d>[-+]?{_UDEC})\s*\}}|(?P<d1>\d))"
)
_EXP_RE = re.compile(r"[eE](?P<e>[-+]?\d+)(?!\w|\.\d)")
_TEN_RE = re.compile(r"\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*(?:\{\s*(?P<e>[-+]?\d+)\s*\}|(?P<e1>[-+]?\d+))")
_MIXED_RE = re.compile(r"\s+(?P<n>\d+)/(?P<d>\d+)(?![\d/]|[.,]\d)")
_LATEX_MIXED_RE = re.compile(r"\s*\\[dt]?frac\s*\{\s*(?P<n>\d+)\s*\}\s*\{\s*(?P<d>\d+)\s*\}")
_DEN_RE = re.compile(rf"\s*/\s*(?P<d>{_UDEC})(?![\d/]|[.,]\d)")
_PCT_RE = re.compile(r"\s*(?:\\?%|percent\b)")

_MAX_EXACT_EXP = 400  # beyond this, 10**e as an exact Fraction is a denial-of-service, not a grade


@dataclass(frozen=True)
class _Num:
    """One number found in text: exact value where cheap, float approximation always."""

    start: int
    end: int
    exact: Fraction | None
    approx: float
    percent: bool

    def candidates(self) -> list[tuple[Fraction | None, float]]:
        """Values this number may stand for: "50%" is 50 or 0.5 depending on the gold's convention."""
        out = [(self.exact, self.approx)]
        if self.percent:
            out.append((self.exact / 100 if self.exact is not None else None, self.approx / 100))
        return out


def _to_float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _fraction(text: str) -> Fraction | None:
    try:
        return Fraction(text.replace(",", ""))
    except (ValueError, ZeroDivisionError):  # >4300 digits trips int()'s limit
        return None


def _scale10(value: Fraction | None, approx: float, exp: int) -> tuple[Fraction | None, float]:
    if value is not None and abs(exp) <= _MAX_EXACT_EXP:
        scaled = value * Fraction(10) ** exp
        return scaled, _to_float(scaled)
    try:
        return None, approx * 10.0**exp
    except OverflowError:
        return None, math.copysign(math.inf, approx) if approx else 0.0


def _parse_at(text: str, head: re.Match[str]) -> _Num | None:
    """Parse the number whose sign/currency prefix is ``head``; None if no digits follow it."""
    pos = head.end()
    exact: Fraction | None
    fm = _LATEX_FRAC_RE.match(text, pos)
    if fm:
        num = _fraction(fm.group("n") or fm.group("n1"))
        den = _fraction(fm.group("d") or fm.group("d1"))
        if num is None or not den:
            return None
        exact, pos = num / den, fm.end()
        approx = _to_float(exact)
    else:
        um = _UDEC_RE.match(text, pos)
        if um is None:
            return None
        literal = um.group(0)
        exact, pos = _fraction(literal), um.end()
        approx = _to_float(exact) if exact is not None else float(literal.replace(",", ""))
        plain_int = "." not in literal
        scaled = False
        em = _EXP_RE.match(text, pos) or _TEN_RE.match(text, pos)
        if em:
            groups = em.groupdict()
            exp = int(groups.get("e") or groups["e1"])
            exact, approx = _scale10(exact, approx, exp)
            pos, scaled = em.end(), True
        done = False
        if plain_int and not scaled and exact is not None:
            # "2 1/2" and "2\frac{1}{2}" are mixed numbers only when the fraction is proper.
            mm = _MIXED_RE.match(text, pos) or _LATEX_MIXED_RE.match(text, pos)
            if mm and 0 < int(mm.group("n")) < int(mm.group("d")):
                exact += Fraction(int(mm.group("n")), int(mm.group("d")))
                approx, pos, done = _to_float(exact), mm.end(), True
        if not done:
            dm = _DEN_RE.match(text, pos)
            den = _fraction(dm.group("d")) if dm else None
            if dm and den:
                if exact is not None:
                    exact /= den
                    approx = _to_float(exact)
                else:
                    approx /= float(den)
                pos = dm.end()
    negative = (head.group("s1") == "-") != (head.group("s2") == "-")
    if negative:
        exact = -exact if exact is not None else None
        approx = -approx
    pm = _PCT_RE.match(text, pos)
    percent = pm is not None
    if pm:
        pos = pm.end()
    return _Num(head.start(), pos, exact, approx, percent)


def _iter_numbers(text: str) -> Iterator[_Num]:
    """All numbers in ``text`` (already prepared), left to right, non-overlapping."""
    pos = 0
    while True:
        head = _HEAD_RE.search(text, pos)
        if head is None:
            return
        num = _parse_at(text, head)
        if num is None:
            pos = head.start() + 1
            continue
        yield num
        pos = num.end


def _word_num(text: str, word: WordNumber) -> _Num:
    """A spelled-out number as a :class:`_Num`, with a following "percent" ("fifty percent")."""
    pm = _PCT_RE.match(text, word.end)
    return _Num(word.start, pm.end() if pm else word.end, Fraction(word.value), float(word.value), pm is not None)


def _first_number(text: str) -> _Num | None:
    prepared = _prep_full(text)
    num = next(_iter_numbers(prepared), None)
    if num is not None:
        return num
    word = find_word_number(prepared)  # spelled out ("one hundred and five"): only where no digits are
    return None if word is None else _word_num(prepared, word)


def normalize_number(text: str) -> float | None:
    """The first number in ``text`` as a float; None when there is none.

    Handles thousands separators ("1,234,567"), currency ("$5.50", "\\$18"), signs (including the unicode
    minus "−"), fractions ("3/4", "\\frac{3}{4}"), mixed numbers ("2 1/2"), scientific notation ("1e3",
    "2 \\times 10^{3}"), trailing units ("12 apples"), a sentence-ending period ("18.") and, where no digits
    are, spelled-out numbers ("one hundred and five").

    A percent sign is dropped: "50%" gives 50.0. Whether a gold 0.5 should accept "50%" is a comparison
    question, answered by :func:`answers_match`, which tries both 50 and 0.5.
    """
    num = _first_number(text)
    return None if num is None else num.approx


# Trailing unit words ("5 cm", "18 square units") that a grader ignores; real math words are kept.
_MATH_WORDS = frozenset(
    ("pi", "oo", "infty", "sqrt", "sin", "cos", "tan", "cot", "sec", "csc", "sinh", "cosh", "tanh", "asin",
     "acos", "atan", "arcsin", "arccos", "arctan", "log", "ln", "exp", "and", "or")
)  # fmt: skip
_UNITS_TAIL_RE = re.compile(r"^(?:\s+[A-Za-z]{2,}(?:\^\d)?\.?)+\s*$")
_DIGIT_SCALES = {"hundred": 100, **SCALES}
_SCALE_RE = re.compile(r"\s+(" + "|".join(_DIGIT_SCALES) + r")\b", re.IGNORECASE)
_MAX_FACTORIAL = 1000  # 1000! has 2568 digits: cheap; beyond, the symbolic path decides under its timeout


def _is_unit_word(word: str) -> bool:
    """Whether a word after a number is a unit ("cm", "apples") rather than part of the value ("pi", "half",
    "times", "five")."""
    w = word.lower().rstrip(".")
    return not (w == "percent" or w in _MATH_WORDS or w in NUMBER_WORDS or w in FRACTION_WORDS or w in ARITHMETIC_WORDS)


def _units_only(rest: str) -> bool:
    """Whether ``rest`` (what follows a number) is empty or unit words only."""
    if not rest.strip():
        return True
    return bool(_UNITS_TAIL_RE.match(rest)) and all(_is_unit_word(w) for w in re.findall(r"[A-Za-z]+", rest))


# A factorial sign after a number; "!=" and "!!" are other operators.
_FACTORIAL_RE = re.compile(r"!(?![=!])")


def _factorial(text: str, num: _Num) -> _Num | None:
    """``num`` followed by "!" read as a factorial ("5!" is 120, "-3!" is -6); None unless ``num`` is a
    small non-negative integer literal."""
    literal = text[num.start : num.end].strip()
    if not re.fullmatch(r"[-+]?\d+", literal) or abs(int(literal)) > _MAX_FACTORIAL:
        return None
    value = math.factorial(abs(int(literal))) * (-1 if literal.startswith("-") else 1)
    return _Num(num.start, num.end + 1, Fraction(value), _to_float(Fraction(value)), False)


def _parse_number_strict(text: str) -> _Num | None:
    """``text`` read as one number (plus optional unit words), else None: "2\\sqrt{3}" is not a number;
    "5!" is 120 and "twenty-one" 21 (here the whole answer is the number, so "!" cannot be punctuation)."""
    s = _strip_markup(_prep_full(text))
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?|°|\\!", "", s).strip().rstrip(".").strip()
    if not s:
        return None
    head = _HEAD_RE.match(s)
    num = _parse_at(s, head) if head else None
    if num is None:
        word = find_word_number(s, anchored=True)
        num = _word_num(s, word) if word else None
    if num is not None and _FACTORIAL_RE.match(s, num.end):
        num = _factorial(s, num)
    scale = _SCALE_RE.match(s, num.end) if num is not None and num.exact is not None else None
    if num is not None and num.exact is not None and scale:  # "2.5 million"
        value = num.exact * _DIGIT_SCALES[scale.group(1).lower()]
        num = _Num(num.start, scale.end(), value, _to_float(value), num.percent)
    if num is None or not _units_only(s[num.end :]):
        return None
    return num


def parse_number(text: str) -> float | None:
    """``text`` read as exactly one number (optionally with unit words), else None: "12 apples" -> 12.0,
    "no hashes here" -> None."""
    num = _parse_number_strict(text)
    return None if num is None else num.approx


def _numbers_equal(a: _Num, b: _Num, rel_tol: float) -> bool:
    for ea, fa in a.candidates():
        for eb, fb in b.candidates():
            if ea is not None and eb is not None and ea.denominator == 1 and eb.denominator == 1:
                if ea == eb:  # integers compare exactly: 100000 vs 100001 is wrong at any tolerance
                    return True
                continue
            if ea is not None and eb is not None and ea == eb:
                return True
            if math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=1e-9):
                return True
    return False
