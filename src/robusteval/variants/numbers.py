"""The numbers of a problem text that a template could vary (behind ``variants draft``).

:func:`find_numbers` returns every number worth a variable, with its exact value and how it is written
(decimals, thousands commas, a sign, a percent sign, its place in a fraction), and the numbers it leaves as
written, each with the reason: inside a word ("H2O", "COVID-19", "3D"), an ordinal ("3rd"), an exponent or
subscript (``x^2``, ``a_{10}``), a power of ten (``10^{8}``), a root index (``\\sqrt[3]``), a time or date
("3:45", "12/25/2024"), leading zeros ("007"), LaTeX thousands (``1{,}000``) or zero. A Unicode minus sign
("−5") stays in the text and the number after it is the magnitude.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

Role = Literal["number", "numerator", "denominator"]

_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?![\d])(?:\.\d+)?|\d+(?:\.\d+)?")
_PERCENT = re.compile(r"\s?(?:%|\\%|percent\b|per cent\b)")
_ORDINAL = re.compile(r"(?:st|nd|rd|th)(?![A-Za-z])")
_SIGN_CONTEXT = set(" \t\n([{=,$:;<>")
# Spans whose numbers stay as written: times, dates, LaTeX thousands, root indices.
_FIXED_SPANS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?![\d:])"), "a time"),
    (re.compile(r"(?<![\d/])\d{1,4}([/.-])\d{1,2}\1\d{1,4}(?!\d|[/.-]\d)"), "a date"),
    (re.compile(r"\d{1,3}(?:\{,\}\d{3})+"), "LaTeX thousands ({,}) cannot be printed by a format spec"),
    (re.compile(r"\\sqrt\s*\[[^\]]*\]"), "a root index"),
)
_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?\d+)\s*\}\s*\{\s*(\d+)\s*\}")


@dataclass(frozen=True)
class Number:
    """One number of the text: ``text[start:end]`` is how it is written (sign and thousands commas included,
    a percent sign not)."""

    start: int
    end: int
    written: str
    value: Fraction
    decimals: int = 0
    thousands: bool = False
    percent: bool = False
    role: Role = "number"
    pair: int | None = None  # index of the other part of a fraction

    @property
    def is_integer(self) -> bool:
        return self.decimals == 0


@dataclass(frozen=True)
class Fixed:
    """A number left as written, and why."""

    written: str
    reason: str


@dataclass
class Found:
    numbers: list[Number] = field(default_factory=list)
    fixed: list[Fixed] = field(default_factory=list)


def _script_spans(text: str) -> list[tuple[int, int]]:
    """Spans of exponents and subscripts: ``^{...}``/``_{...}`` groups (nested braces) and ``^2``/``_1``."""
    spans = []
    for match in re.finditer(r"[\^_]\s*", text):
        i = match.end()
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            spans.append((i, j + 1))
        else:
            spans.append((match.start(), i + 1))  # one character: x^2, a_1
    return spans


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def find_numbers(text: str) -> Found:
    """Numbers of ``text`` a template could vary, in text order, and those left as written."""
    found = Found()
    scripts = _script_spans(text)
    fixed_spans: list[tuple[int, int, str]] = []
    for pattern, why in _FIXED_SPANS:
        for m in pattern.finditer(text):
            fixed_spans.append((m.start(), m.end(), why))
    for match in _NUMBER.finditer(text):
        start, end, written = match.start(), match.end(), match.group()
        reason = _fixed_reason(text, start, end, written, scripts, fixed_spans)
        if reason:
            found.fixed.append(Fixed(written, reason))
            continue
        decimals = len(written.split(".")[1]) if "." in written else 0
        value = Fraction(written.replace(",", ""))
        if start >= 1 and text[start - 1] == "-" and (start == 1 or text[start - 2] in _SIGN_CONTEXT):
            start, value, written = start - 1, -value, "-" + written
        percent = bool(_PERCENT.match(text, end))
        found.numbers.append(
            Number(start, end, written, value, decimals, "," in written, percent)
        )
    _pair_fractions(text, found)
    return found


def _fixed_reason(
    text: str,
    start: int,
    end: int,
    written: str,
    scripts: list[tuple[int, int]],
    fixed_spans: list[tuple[int, int, str]],
) -> str | None:
    before = text[start - 1] if start else ""
    before2 = text[start - 2] if start >= 2 else ""
    after = text[end] if end < len(text) else ""
    for a, b, reason in fixed_spans:
        if a <= start < b:
            return reason
    if _inside(start, scripts):
        return "an exponent or subscript"
    if before.isalpha() or before in ("_", ".", "\\") or (before == "-" and before2.isalpha()):
        return "part of a word or name"
    if after == "." and end + 1 < len(text) and text[end + 1].isdigit():
        return "a dotted number (version, date)"
    if after.isalpha():
        if _ORDINAL.match(text, end):
            return "an ordinal"
        if after.isupper():
            return "part of a name"
    if len(written) > 1 and written[0] == "0" and written[1].isdigit():
        return "leading zeros"
    if Fraction(written.replace(",", "")) == 0:
        return "zero"
    if written == "10" and re.match(r"\s*\^", text[end:]):
        return "a power of ten"
    return None


def _pair_fractions(text: str, found: Found) -> None:
    """``3/4`` and ``\\frac{3}{4}``: mark numerator and denominator of integer fractions."""
    numbers = found.numbers
    by_start = {n.start: i for i, n in enumerate(numbers)}
    pairs: list[tuple[int, int]] = []
    for i in range(len(numbers) - 1):
        a, b = numbers[i], numbers[i + 1]
        if a.is_integer and b.is_integer and b.value > 0 and text[a.end:b.start] == "/":
            pairs.append((i, i + 1))
    for m in _FRAC.finditer(text):
        num, den = by_start.get(m.start(1)), by_start.get(m.start(2))
        if num is not None and den is not None and numbers[num].is_integer and numbers[den].is_integer:
            pairs.append((num, den))
    for i, j in pairs:
        if numbers[i].role != "number" or numbers[j].role != "number":
            continue  # 1/2/3: the first pair wins
        numbers[i] = _with(numbers[i], "numerator", j)
        numbers[j] = _with(numbers[j], "denominator", i)


def _with(number: Number, role: Role, pair: int) -> Number:
    return Number(
        number.start, number.end, number.written, number.value, number.decimals, number.thousands,
        number.percent, role, pair,
    )
