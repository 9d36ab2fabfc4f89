"""Extract final answers from model completions and compare them with gold answers.

The goal is to grade the way a careful human would: "$1,234.50" is 1234.5, "is 18." ends with the number
18 (not 18.0-something), "1, 2" is two numbers while "1,234,567" is one, "\\frac{1}{2}" equals "0.5" and
"\\sqrt{8}" equals "2\\sqrt{2}".

Public API:

* :func:`extract_answer_first` / :func:`split_answer_and_cot` for answer-first chain-of-thought completions
  (" The answer is 18. Because ...");
* :func:`extract_final_answer` for free-form math solutions (last ``\\boxed{}``, else last "the answer is",
  else last number);
* :func:`normalize_number`, :func:`normalize_yesno`;
* :func:`answers_match`, dispatching on :data:`robusteval.data.example.AnswerType`.

Symbolic comparison uses sympy through a small hand-written LaTeX tokenizer and recursive-descent parser
(never ``eval``/``exec``, and no dependency on ``sympy.parsing.latex``/antlr4). Sympy runs in a lazily
started worker process that is killed when it exceeds the timeout, because simplifying hostile input
(``2^{10^{10}}``) can spend minutes inside C code where no signal or thread can interrupt it. The first
symbolic comparison pays ~0.5 s to start the worker (outside the timeout); numeric and string-identical
answers never need it. Where no worker can be started (Windows), sympy runs in-process, bounded by
SIGALRM on the main thread and unbounded on other threads.
"""

from __future__ import annotations

import atexit
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = [
    "answers_match",
    "extract_answer_first",
    "extract_final_answer",
    "normalize_number",
    "normalize_yesno",
    "split_answer_and_cot",
]

# ----------------------------------------------------------------------------------------------------------
# Text preparation
# ----------------------------------------------------------------------------------------------------------

# Minus look-alikes models emit; each maps to one character so offsets in the text stay valid.
_MINUS_TABLE = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"})

_VULGAR_RE = re.compile(r"(\d?)([\u00bc-\u00be\u2150-\u215e])")


def _vulgar_sub(m: re.Match[str]) -> str:
    frac = Fraction(unicodedata.numeric(m.group(2))).limit_denominator(100)
    # "2½" is the mixed number 2 1/2, so keep a space between the whole part and the fraction.
    return (
        f"{m.group(1)} {frac.numerator}/{frac.denominator}"
        if m.group(1)
        else f"{frac.numerator}/{frac.denominator}"
    )


def _prep_light(text: str) -> str:
    """Length-preserving cleanup, safe for text whose substrings are returned to the caller."""
    return text.translate(_MINUS_TABLE)


def _prep_full(text: str) -> str:
    """Aggressive cleanup for values that are only compared, never returned (NFKC changes lengths)."""
    text = _VULGAR_RE.sub(_vulgar_sub, text)
    text = unicodedata.normalize("NFKC", text).translate(_MINUS_TABLE)
    text = text.replace("\u2044", "/")  # NFKC fraction slash
    # LaTeX thousands separators: "1{,}234" and "1\,234".
    text = text.replace("{,}", ",")
    return re.sub(r"(?<=\d)\\,(?=\d{3}(?!\d))", ",", text)


def _find_braced(text: str, open_pos: int) -> int | None:
    """Index just past the brace that closes the one at ``open_pos``; None when unbalanced."""
    depth = 0
    for j in range(open_pos, len(text)):
        c = text[j]
        if c == "\\":
            continue
        if c == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif c == "}" and (j == 0 or text[j - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return j + 1
    return None


_BOXED_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*")


def _last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}``/``\\fbox{...}`` (or ``\\boxed 5``)."""
    for m in reversed(list(_BOXED_RE.finditer(text))):
        pos = m.end()
        if pos < len(text) and text[pos] == "{":
            end = _find_braced(text, pos)
            if end is not None:  # a truncated completion can leave the box unclosed: try an earlier one
                return text[pos + 1 : end - 1].strip()
        else:
            tok = re.match(r"[^\s$]+", text[pos:])
            if tok:
                return tok.group(0).rstrip(".")
    return None


_WRAP_CMDS = (
    "text",
    "textbf",
    "textrm",
    "textit",
    "mathrm",
    "mathbf",
    "mathit",
    "mbox",
    "operatorname",
    "boxed",
    "fbox",
)
_WRAP_RE = re.compile(r"\\(" + "|".join(_WRAP_CMDS) + r")\s*(?=\{)")


def _unwrap_commands(text: str) -> str:
    """Replace ``\\text{X}``, ``\\boxed{X}``, ... by `` X`` (the space keeps "5\\text{cm}" two words)."""
    while True:
        m = _WRAP_RE.search(text)
        if m is None:
            return text
        end = _find_braced(text, m.end())
        if end is None:
            return text[: m.start()] + text[m.end() + 1 :]
        inner = text[m.end() + 1 : end - 1]
        sep = " " if m.group(1) not in ("boxed", "fbox") else ""
        text = text[: m.start()] + sep + inner + text[end:]


def _strip_markup(text: str) -> str:
    """Remove the presentation layer around an answer: math delimiters, markdown, wrapping commands."""
    text = _unwrap_commands(text.strip())
    text = re.sub(r"\\[()\[\]]", " ", text)  # \( \) \[ \]
    # "$" goes without a space so "-$5" stays a number; "\\$" is an escaped dollar.
    text = text.replace("\\$", "").replace("$", "").replace("**", " ").replace("`", " ")
    return " ".join(text.split())


# ----------------------------------------------------------------------------------------------------------
# Numbers
# ----------------------------------------------------------------------------------------------------------

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


_UNIT_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_WORD_UNITS = {w: i for i, w in enumerate(_UNIT_WORDS)}
_WORD_TENS = {
    w: 10 * i
    for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 2)
}
_WORD_NUM_RE = re.compile(
    r"\b(?:(?P<t>" + "|".join(_WORD_TENS) + r")(?:[-\s](?P<u1>" + "|".join(list(_WORD_UNITS)[1:10]) + r"))?"
    r"|(?P<u>" + "|".join(sorted(_WORD_UNITS, key=len, reverse=True)) + r"))\b",
    re.IGNORECASE,
)


def _word_number(text: str) -> tuple[int, re.Match[str]] | None:
    """First spelled-out number below 100 ("eighteen", "twenty-one"): a fallback when no digits exist."""
    m = _WORD_NUM_RE.search(text)
    if m is None:
        return None
    if m.group("t"):
        value = _WORD_TENS[m.group("t").lower()] + (
            _WORD_UNITS[m.group("u1").lower()] if m.group("u1") else 0
        )
    else:
        value = _WORD_UNITS[m.group("u").lower()]
    return value, m


def _first_number(text: str) -> _Num | None:
    prepared = _prep_full(text)
    num = next(_iter_numbers(prepared), None)
    if num is not None:
        return num
    word = _word_number(prepared)
    if word is None:
        return None
    return _Num(word[1].start(), word[1].end(), Fraction(word[0]), float(word[0]), False)


def normalize_number(text: str) -> float | None:
    """The first number in ``text`` as a float; None when there is none.

    Handles thousands separators ("1,234,567"), currency ("$5.50", "\\$18"), signs (including the unicode
    minus "−"), fractions ("3/4", "\\frac{3}{4}"), mixed numbers ("2 1/2"), scientific notation ("1e3",
    "2 \\times 10^{3}"), trailing units ("12 apples") and a sentence-ending period ("18.").

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


def _parse_number_strict(text: str) -> _Num | None:
    """``text`` read as one number (plus optional unit words), else None: "2\\sqrt{3}" is not a number."""
    s = _strip_markup(_prep_full(text))
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?|°|\\!", "", s).strip().rstrip(".").strip()
    if not s:
        return None
    head = _HEAD_RE.match(s)
    num = _parse_at(s, head) if head else None
    if num is None:
        return None
    rest = s[num.end :]
    if rest.strip():
        if not _UNITS_TAIL_RE.match(rest):
            return None
        if any(w.lower().rstrip(".") in _MATH_WORDS for w in re.findall(r"[A-Za-z]+", rest)):
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


# ----------------------------------------------------------------------------------------------------------
# Yes / no
# ----------------------------------------------------------------------------------------------------------

_YESNO = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_YESNO_RE = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)


def normalize_yesno(text: str) -> str | None:
    """Return "yes"/"no" for answers like "Yes", "yes.", "**YES**, because", "True", "\\boxed{No}"; else None.

    Only the leading word decides (a stray "no" deep inside a sentence is not an answer), with one
    exception: text that states "the answer is X" is read at X.
    """
    s = _strip_markup(_prep_light(text)).lower()
    s = s.lstrip(" \t\n\"'([{*_:>-")
    m = re.match(r"(yes|no|true|false)\b", s)
    if m:
        return _YESNO[m.group(1)]
    if s.rstrip(".!") in ("y", "n"):
        return "yes" if s[0] == "y" else "no"
    phrase = _ANSWER_PHRASE_RE.search(s)
    if phrase:
        seg = s[phrase.end() : _sentence_end(s, phrase.end())]
        m2 = _YESNO_RE.search(seg)
        if m2:
            return _YESNO[m2.group(1).lower()]
    return None


# ----------------------------------------------------------------------------------------------------------
# Answer extraction
# ----------------------------------------------------------------------------------------------------------

_ANSWER_PHRASE_RE = re.compile(
    r"\b(?:(?:the\s+)?(?:final\s+|correct\s+|right\s+)?answer\s+is\s*:?|(?:final\s+)?answer\s*:)\s*",
    re.IGNORECASE,
)
# A period after these does not end a sentence ("approx. 18"). "No." and single letters ("B.") do.
_ABBREVIATIONS = frozenset({"approx", "e.g", "i.e", "vs", "mr", "mrs", "dr", "st", "ca", "cf"})
_CLOSERS = "*_\"')]`$"


def _sentence_end(text: str, start: int) -> int:
    """Index just past the sentence that runs from ``start``.

    A sentence ends at ".", "!" or "?" followed by whitespace or the end of text (so "2.5" and
    "$1,234.50" do not end it), outside braces, and not after a known abbreviation; or at a newline once
    some content has been seen. Closing markdown/quotes right after the terminator belong to the sentence.
    """
    depth = 0
    seen = False
    n = len(text)
    for j in range(start, n):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "\n":
            if seen:
                return j
            continue
        elif c in ".!?" and depth == 0:
            nxt = text[j + 1] if j + 1 < n else ""
            if nxt and not nxt.isspace() and nxt not in _CLOSERS:
                continue
            if c == ".":
                word = re.search(r"([\w.]+)$", text[start:j])
                if word and word.group(1).lower() in _ABBREVIATIONS:
                    continue
            end = j + 1
            while end < n and text[end] in _CLOSERS:
                end += 1
            return end
        if not c.isspace():
            seen = True
    return n


def _clean_segment(segment: str) -> str | None:
    """An answer phrase's tail, presentation stripped: "$\\boxed{18}$." -> "18"."""
    s = _strip_markup(segment)
    s = s.strip().rstrip(".!?,;:").strip()
    s = s.strip("\"'*_`").strip()
    return s or None


def _answer_from_segment(segment: str, answer_type: str) -> str | None:
    """Read an answer of ``answer_type`` from the text that follows "The answer is"."""
    if answer_type == "number":
        prepared = _prep_light(segment)
        num = next(_iter_numbers(prepared), None)
        if num is not None:
            return _token_text(prepared, num)
        word = _word_number(prepared)
        return word[1].group(0) if word else None
    if answer_type == "yesno":
        m = _YESNO_RE.search(segment)
        return _YESNO[m.group(1).lower()] if m else None
    # "The answer is 5 because 2+3=5" names 5; the justification is not part of the answer.
    segment = re.split(r"(?:,\s*|\s+)(?:because|since)\b", segment, maxsplit=1, flags=re.IGNORECASE)[0]
    return _clean_segment(_prep_light(segment))


def _token_text(prepared: str, num: _Num) -> str:
    """A number as written; "$18$" is math mode rather than dollars, so its "$" is dropped."""
    token = prepared[num.start : num.end].strip()
    if token.startswith("$") and prepared.startswith("$", num.end):
        token = token[1:]
    return token


def extract_answer_first(text: str, answer_type: str) -> str | None:
    """The answer stated by the FIRST "The answer is X" (or "answer: X") in an answer-first completion.

    For numbers, X is the first number in that sentence, returned as written ("$1,234.50", "-3", "3/4",
    "50%"; "\\boxed{5}" gives "5"); for yes/no, "yes" or "no"; otherwise the sentence's tail with
    markup removed. None when there is no such phrase or it names no answer of that type.
    """
    m = _ANSWER_PHRASE_RE.search(text)
    if m is None:
        return None
    segment = text[m.end() : _sentence_end(text, m.end())]
    return _answer_from_segment(segment, answer_type)


def split_answer_and_cot(text: str) -> tuple[str, str]:
    """Split an answer-first completion into ``(answer_sentence, cot)``.

    ``answer_sentence`` runs from the first "The answer is" to the end of its sentence ("The answer is
    $1,234.50." stays whole). ``cot`` is everything else, stripped: the text after that sentence, preceded
    by any text before it (normally none) so reasoning is never silently dropped. Without the phrase:
    ``("", text.strip())``.
    """
    m = _ANSWER_PHRASE_RE.search(text)
    if m is None:
        return "", text.strip()
    start = m.start()
    while start > 0 and text[start - 1] in "*_":  # "**The answer is 18.**" keeps its bold markers together
        start -= 1
    end = _sentence_end(text, m.end())
    before, after = text[:start].strip(), text[end:].strip()
    cot = f"{before} {after}".strip() if before else after
    return text[start:end].strip(), cot


def extract_final_answer(text: str, answer_type: str = "math") -> str | None:
    """The final answer of a free-form solution, as a raw string.

    Order: the last complete ``\\boxed{...}``/``\\fbox{...}`` (balanced braces); else the last "the answer
    is ..."/"answer: ..."; else the last number in the text (for yes/no: the last yes/no word). For
    ``answer_type="number"`` the first number inside the chosen answer is returned; for "yesno", "yes"/"no".
    Text and label answers have no reliable last-resort, so they give None without a box or phrase.
    """
    light = _prep_light(text)
    boxed = _last_boxed(light)
    if boxed:
        got = _answer_from_segment(boxed, answer_type)
        if got is not None:
            return got
    for m in reversed(list(_ANSWER_PHRASE_RE.finditer(light))):
        got = _answer_from_segment(light[m.end() : _sentence_end(light, m.end())], answer_type)
        if got is not None:
            return got
    if answer_type == "yesno":
        words = _YESNO_RE.findall(light)
        return _YESNO[words[-1].lower()] if words else None
    if answer_type in ("number", "math"):
        nums = list(_iter_numbers(light))
        if nums:
            return _token_text(light, nums[-1])
    return None


# ----------------------------------------------------------------------------------------------------------
# Text / label
# ----------------------------------------------------------------------------------------------------------

_BRACKETS = {"(": ")", "[": "]", "{": "}"}


def _normalize_text(text: str, label: bool = False) -> str:
    s = _strip_markup(unicodedata.normalize("NFKC", text)).lower()
    s = " ".join(s.split()).strip(" .,;:!?\"'`*_")
    if len(s) >= 2 and _BRACKETS.get(s[0]) == s[-1] and _outer_pair(s):
        s = s[1:-1].strip(" .,;:!?\"'`*_")
    if label:
        s = re.sub(r"^(?:option|choice)\s+", "", s)
        s = re.sub(r"^([a-z0-9])\)$", r"\1", s)  # "b)" -> "b"
    return s


def _outer_pair(s: str) -> bool:
    """True when the bracket at s[0] closes at s[-1] (not "(a) or (b)")."""
    depth = 0
    for j, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and j != len(s) - 1:
                return False
    return depth == 0


# ----------------------------------------------------------------------------------------------------------
# Math: LaTeX -> tokens (parent side, pure string work)
# ----------------------------------------------------------------------------------------------------------

_FUNCS = {
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "cot": "cot", "sec": "sec", "csc": "csc",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp", "log": "log", "ln": "log", "Abs": "Abs",
    "abs": "Abs", "floor": "floor", "ceil": "ceiling", "binomial": "binomial", "root": "root",
}  # fmt: skip
_CONSTS = {"pi": "pi", "oo": "oo", "infty": "oo", "e": "E", "i": "I"}
_GREEK = frozenset(
    ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
     "kappa", "lambda", "mu", "nu", "xi", "omicron", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi",
     "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega")
)  # fmt: skip
_SKIP_CMDS = frozenset(
    {"left", "right", "displaystyle", "textstyle", "limits", "big", "Big", "bigl", "bigr", "Bigl", "Bigr",
     "quad", "qquad", "circ", "%", "!", ",", ";", ":", " "}
)  # fmt: skip
_CMD_OPS = {
    "cdot": "*",
    "times": "*",
    "ast": "*",
    "div": "/",
    "{": "(",
    "}": ")",
    "lbrace": "(",
    "rbrace": ")",
}

Token = tuple[str, str]  # (kind, text): kind in num, id, fn, op


class _Unsupported(Exception):
    """LaTeX we do not convert; the caller falls back to string comparison."""


def _latex_to_plain(s: str) -> str:
    """Rewrite LaTeX as a plain infix string ("\\frac{a}{b}" -> "((a)/(b))"); raises _Unsupported."""
    out: list[str] = []
    i, n = 0, len(s)

    def arg(pos: int) -> tuple[str, int]:
        while pos < n and s[pos].isspace():
            pos += 1
        if pos >= n:
            raise _Unsupported("missing argument")
        if s[pos] == "{":
            end = _find_braced(s, pos)
            if end is None:
                raise _Unsupported("unbalanced braces")
            return s[pos + 1 : end - 1], end
        if s[pos] == "\\":
            m = re.match(r"\\(?:[A-Za-z]+|.)", s[pos:])
            assert m is not None
            return m.group(0), pos + m.end()
        return s[pos], pos + 1

    def operand(pos: int) -> tuple[str, int]:
        """A function's operand after "\\sin^2": "(...)" (possibly with \\left/\\right) or one argument."""
        m = re.match(r"\s*(?:\\left\s*)?\(", s[pos:])
        if m is None:
            return arg(pos)
        depth, j = 0, pos + m.end() - 1
        for k in range(j, n):
            depth += {"(": 1, ")": -1}.get(s[k], 0)
            if depth == 0:
                return s[j + 1 : k].removesuffix("\\right"), k + 1
        raise _Unsupported("unbalanced parentheses")

    abs_open = False
    while i < n:
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            if m is None:
                raise _Unsupported("trailing backslash")
            name, i = m.group(1), i + m.end()
            if name in ("frac", "dfrac", "tfrac", "cfrac"):
                a, i = arg(i)
                b, i = arg(i)
                out.append(f" (({_latex_to_plain(a)})/({_latex_to_plain(b)})) ")
            elif name == "binom":
                a, i = arg(i)
                b, i = arg(i)
                out.append(f" binomial(({_latex_to_plain(a)}),({_latex_to_plain(b)})) ")
            elif name == "sqrt":
                idx = re.match(r"\s*\[([^\]]*)\]", s[i:])
                root = None
                if idx:
                    root, i = idx.group(1), i + idx.end()
                a, i = arg(i)
                body = _latex_to_plain(a)
                out.append(f" root(({body}),({_latex_to_plain(root)})) " if root else f" sqrt({body}) ")
            elif name == "log" and s[i : i + 1] == "_":
                base, i = arg(i + 1)
                a, i = arg(i)
                out.append(f" log(({_latex_to_plain(a)}),({_latex_to_plain(base)})) ")
            elif name in _SKIP_CMDS:
                continue
            elif name in _CMD_OPS:
                out.append(f" {_CMD_OPS[name]} ")
            elif name in ("lvert", "rvert", "vert", "|"):
                out.append(" Abs( " if not abs_open else " ) ")
                abs_open = not abs_open
            elif name in ("lfloor", "rfloor", "lceil", "rceil"):
                out.append({"lfloor": " floor( ", "lceil": " ceil( "}.get(name, " ) "))
            elif name in _FUNCS and re.match(r"\s*\^", s[i:]):
                # "\sin^2 x" is (sin x)^2, not sin applied to "^2 x"
                power, i = arg(s.index("^", i) + 1)
                body, i = operand(i)
                out.append(f" (({name}({_latex_to_plain(body)}))**({_latex_to_plain(power)})) ")
            elif name in _FUNCS or name in _CONSTS or name in _GREEK:
                out.append(f" {name} ")
            else:
                raise _Unsupported(f"\\{name}")
        elif c == "^":
            a, i = arg(i + 1)
            out.append(f" ** ({_latex_to_plain(a)}) ")
        elif c == "|":
            out.append(" Abs( " if not abs_open else " ) ")
            abs_open = not abs_open
            i += 1
        else:
            out.append(
                {"{": " ( ", "}": " ) ", "[": " ( ", "]": " ) ", "·": "*", "×": "*", "÷": "/"}.get(c, c)
            )
            i += 1
    if abs_open:
        raise _Unsupported("unclosed |")
    return "".join(out)


_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?|\.\d+)|(?P<id>[A-Za-z]+(?:_[A-Za-z0-9]+)?)|(?P<op>\*\*|[-+*/(),!=]))"
)
_MAX_TOKENS = 400


def _tokenize(plain: str) -> list[Token]:
    """Tokens for the sympy-side parser, with implicit multiplication made explicit ("2x(y)" -> 2*x*(y))."""
    raw: list[Token] = []
    pos = 0
    plain = plain.rstrip()
    while pos < len(plain):
        m = _TOKEN_RE.match(plain, pos)
        if m is None or m.end() == pos:
            raise _Unsupported(f"character {plain[pos]!r}")
        pos = m.end()
        if m.group("num"):
            raw.append(("num", m.group("num")))
        elif m.group("op"):
            raw.append(("op", m.group("op")))
        else:
            name = m.group("id")
            if name in _FUNCS:
                raw.append(("fn", _FUNCS[name]))
            elif name in _CONSTS:
                raw.append(("const", _CONSTS[name]))
            elif name in _GREEK or "_" in name or len(name) == 1:
                raw.append(("id", name))
            else:  # "xy" is x*y, as in LaTeX
                raw.extend(("const", _CONSTS[ch]) if ch in _CONSTS else ("id", ch) for ch in name)
    out: list[Token] = []
    for tok in raw:
        if out:
            prev = out[-1]
            left = prev[0] in ("num", "id", "const") or prev in (("op", ")"), ("op", "!"))
            right = tok[0] in ("num", "id", "const", "fn") or tok == ("op", "(")
            if left and right:
                if prev[0] == "num" and tok[0] == "num":
                    raise _Unsupported("two adjacent numbers")
                out.append(("op", "*"))
        out.append(tok)
    if not out or len(out) > _MAX_TOKENS:
        raise _Unsupported("empty or too long")
    return out


def _to_tokens(expr: str) -> list[Token] | None:
    try:
        return _tokenize(_latex_to_plain(expr))
    except (_Unsupported, RecursionError):
        return None


# ----------------------------------------------------------------------------------------------------------
# Math: sympy side (runs in the worker process)
# ----------------------------------------------------------------------------------------------------------


class _Parser:
    """Recursive-descent parser from tokens to a sympy expression; no eval, no name lookup beyond tables.

    expr := term (("+"|"-") term)* ; term := unary (("*"|"/") unary)* ; unary := ("-"|"+") unary | power ;
    power := postfix ("**" unary)? ; postfix := atom "!"* ; atom := num | id | const | fn args | "(" expr ")"
    """

    def __init__(self, tokens: Sequence[Token], sp: Any) -> None:
        self.toks, self.i, self.sp = tokens, 0, sp

    def _peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _eat(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.i += 1
            return True
        return False

    def parse(self) -> Any:
        e = self._expr()
        if self.i != len(self.toks):
            raise ValueError("trailing tokens")
        return e

    def _expr(self) -> Any:
        e = self._term()
        while True:
            if self._eat("+"):
                e = e + self._term()
            elif self._eat("-"):
                e = e - self._term()
            else:
                return e

    def _term(self) -> Any:
        e = self._unary()
        while True:
            if self._eat("*"):
                e = e * self._unary()
            elif self._eat("/"):
                e = e / self._unary()
            else:
                return e

    def _unary(self) -> Any:
        if self._eat("-"):
            return -self._unary()
        if self._eat("+"):
            return self._unary()
        return self._power()

    def _power(self) -> Any:
        base = self._postfix()
        if self._eat("**"):
            return self.sp.Pow(base, self._unary())
        return base

    def _postfix(self) -> Any:
        e = self._atom()
        while self._eat("!"):
            e = self.sp.factorial(e)
        return e

    def _atom(self) -> Any:
        sp = self.sp
        tok = self._peek()
        if tok is None:
            raise ValueError("unexpected end")
        self.i += 1
        kind, text = tok
        if kind == "num":
            return sp.Rational(text)
        if kind == "const":
            return {"pi": sp.pi, "oo": sp.oo, "E": sp.E, "I": sp.I}[text]
        if kind == "id":
            return sp.Symbol("lamda" if text == "lambda" else text)
        if kind == "fn":
            if self._eat("("):
                args = [self._expr()]
                while self._eat(","):
                    args.append(self._expr())
                if not self._eat(")"):
                    raise ValueError("missing )")
            else:  # "\sin x", "\sqrt2" after conversion: the function applies to the next power
                args = [self._power()]
            func = getattr(sp, text)
            return func(*args)
        if tok == ("op", "("):
            e = self._expr()
            if not self._eat(")"):
                raise ValueError("missing )")
            return e
        raise ValueError(f"unexpected {text!r}")


def _sympy_expr_equal(a: Any, b: Any, rel_tol: float, sp: Any) -> bool:
    diff = a - b
    if diff == 0:
        return True
    if not diff.free_symbols:
        try:
            va, vb = complex(sp.N(a, 30)), complex(sp.N(b, 30))
        except (TypeError, ValueError):
            va = vb = complex("nan")
        if not (math.isnan(va.real) or math.isnan(vb.real)):
            return abs(va - vb) <= max(rel_tol * max(abs(va), abs(vb)), 1e-9)
    if sp.simplify(diff) == 0:
        return True
    return a.equals(b) is True


def _symbolic_equal_one(ta: Sequence[Token], tb: Sequence[Token], rel_tol: float) -> bool:
    import sympy as sp

    def split_eq(toks: Sequence[Token]) -> list[list[Token]]:
        parts: list[list[Token]] = [[]]
        for t in toks:
            if t == ("op", "="):
                parts.append([])
            else:
                parts[-1].append(t)
        return parts

    pa, pb = split_eq(ta), split_eq(tb)
    if len(pa) != len(pb) or len(pa) > 2:
        return False
    ea = [_Parser(p, sp).parse() for p in pa]
    eb = [_Parser(p, sp).parse() for p in pb]
    if len(ea) == 1:
        return _sympy_expr_equal(ea[0], eb[0], rel_tol, sp)
    # Equations: "y = 2x+1" matches "2x+1 = y" (same zero set up to sign).
    da, db = ea[0] - ea[1], eb[0] - eb[1]
    return _sympy_expr_equal(da, db, rel_tol, sp) or _sympy_expr_equal(da, -db, rel_tol, sp)


def _symbolic_equal_batch(
    pairs: Sequence[tuple[Sequence[Token], Sequence[Token]]], rel_tol: float
) -> list[bool]:
    """Worker entry point: one bool per pair; a pair that sympy cannot handle is unequal."""
    results = []
    for ta, tb in pairs:
        try:
            results.append(bool(_symbolic_equal_one(ta, tb, rel_tol)))
        # sympy raises many types on odd input (TypeError, ValueError, PolynomialError, ...)
        except Exception:
            results.append(False)
    return results


# ----------------------------------------------------------------------------------------------------------
# Timeout-enforcing worker processes
# ----------------------------------------------------------------------------------------------------------

_STARTUP_TIMEOUT = 60.0  # starting Python + importing sympy; not counted against the caller's timeout
_MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
# The child is a fresh interpreter (not multiprocessing): that never re-imports the caller's __main__
# (an unguarded script would otherwise run again in the worker), never forks a process that may hold
# torch/httpx threads' locks, and works inside daemonic multiprocessing workers.
_BOOT = "import sys; sys.path.insert(0, sys.argv[2]); from robusteval.data.answers import _worker_main; _worker_main(int(sys.argv[1]))"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding robusteval/


def _worker_main(fd: int) -> None:
    """Child loop: receive (fn, args) on socket ``fd``, send ("ok", result) or ("err", message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent, which then closes our socket
    conn = Connection(fd)
    import sympy  # noqa: F401  -- warm the import before reporting ready, so timeouts measure work only

    conn.send(("ready", None))
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):  # the parent exited or dropped us
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except Exception as exc:
            reply = ("err", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


class _Worker:
    """One child interpreter on a socket pair; killed (and discarded) when a call overruns its timeout."""

    def __init__(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        try:
            fd = child_sock.fileno()
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(fd), _PACKAGE_ROOT],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())
        try:
            ready = self.conn.poll(_STARTUP_TIMEOUT) and self.conn.recv() == ("ready", None)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise RuntimeError("sympy worker did not start")

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
        self.conn.send((fn, args))
        if self.conn.poll(timeout):
            reply: tuple[str, Any] = self.conn.recv()
            return reply
        self.kill()
        return "timeout", None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)
        self.conn.close()


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(_MAX_WORKERS)
        self.idle: list[_Worker] = []
        self.broken = False  # a worker failed to start once (no pass_fds on Windows, ...): stay inline


_pool = _Pool()


def _reset_pool_in_child() -> None:
    # A forked child must not share the parent's sockets; it starts its own workers when needed.
    global _pool
    _pool = _Pool()


def _shutdown_pool() -> None:
    with _pool.lock:
        workers, _pool.idle = _pool.idle, []
    for worker in workers:
        worker.kill()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_in_child)
atexit.register(_shutdown_pool)


class _AlarmTimeout(Exception):
    pass


def _call_inline(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
    """Fallback without a worker: SIGALRM bounds the call on the main thread; elsewhere it runs unbounded."""
    use_alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0  # never clobber someone else's timer
    )
    if not use_alarm:
        try:
            return "ok", fn(*args)
        except Exception as exc:
            return "err", repr(exc)

    def on_alarm(signum: int, frame: Any) -> None:
        raise _AlarmTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        return "ok", fn(*args)
    except _AlarmTimeout:
        return "timeout", None
    except Exception as exc:
        return "err", repr(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_with_timeout(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
    """Run picklable ``fn(*args)`` in a worker process; ("ok", result), ("timeout", None) or ("err", msg).

    Workers are started lazily (the first call pays ~0.5 s, outside ``timeout``) and reused; one that
    overruns is killed, so a runaway sympy call costs a restart, never a hang.
    """
    pool = _pool
    if pool.broken:
        return _call_inline(fn, args, timeout)
    with pool.slots:
        with pool.lock:
            worker = pool.idle.pop() if pool.idle else None
        if worker is None:
            try:
                worker = _Worker()
            except Exception:
                pool.broken = True
                return _call_inline(fn, args, timeout)
        try:
            status, value = worker.call(fn, args, timeout)
        except (OSError, EOFError, ValueError):  # the worker died (OOM killer, ...): drop it
            worker.kill()
            return "err", "worker died"
        if status != "timeout":
            with pool.lock:
                pool.idle.append(worker)
        return status, value


# ----------------------------------------------------------------------------------------------------------
# Math comparison
# ----------------------------------------------------------------------------------------------------------

_MAX_MATH_CHARS = 1000
_ASSIGN_RE = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(?=\S)")


def _clean_math(text: str) -> str:
    s = _prep_full(text).strip()
    boxed = _last_boxed(s)
    if boxed is not None:
        s = boxed
    s = _strip_markup(s)
    s = re.sub(r"\\(?:left|right)(?![A-Za-z])", "", s)
    s = re.sub(r"\\(?:displaystyle|textstyle)(?![A-Za-z])|\\[!,;: ]", " ", s)
    s = re.sub(r"\\[dtc]frac(?![A-Za-z])", r"\\frac", s)
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?|°", "", s)
    s = " ".join(s.split()).rstrip(".").strip()
    # Trailing unit words ("5\sqrt{2} cm") after something math-like.
    m = re.search(r"(?<=[\d})a-zA-Z])(\s+[A-Za-z]{2,}(?:\^\d)?)+$", s)
    if m and not any(w in _MATH_WORDS for w in re.findall(r"[A-Za-z]+", m.group(0))):
        s = s[: m.start()].strip()
    return s


def _split_composite(s: str) -> tuple[str, list[str]] | None:
    """("()", ["1", "2"]) for "(1, 2)"; ("{}", ...) for sets; ("", ...) for a bare list "1, 2"."""
    kind = ""
    inner = s
    if s.startswith("\\{") and s.endswith("\\}"):
        kind, inner = "{}", s[2:-2]
    elif len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        depth = 0
        for j, c in enumerate(s):
            depth += c in "([{"
            depth -= c in ")]}"
            if depth == 0 and j != len(s) - 1:
                break
        else:
            kind, inner = s[0] + s[-1], s[1:-1]
    parts: list[str] = []
    depth, last = 0, 0
    for j, c in enumerate(inner):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[last:j].strip())
            last = j + 1
    parts.append(inner[last:].strip())
    if len(parts) < 2 and kind != "{}":
        return None
    return kind, parts


class _Pending:
    """Cheap comparisons decided in the parent; undecided ones queued for one batched worker call."""

    def __init__(self, rel_tol: float) -> None:
        self.rel_tol = rel_tol
        self.pairs: list[tuple[list[Token], list[Token]]] = []

    def simple(self, a: str, b: str) -> bool | int:
        """True/False when decided without sympy, else the index of a queued symbolic comparison."""
        if a.replace(" ", "") == b.replace(" ", ""):
            return True
        na, nb = _parse_number_strict(a), _parse_number_strict(b)
        if na is not None and nb is not None:
            return _numbers_equal(na, nb, self.rel_tol)
        ta, tb = _to_tokens(_exact_text(na, a)), _to_tokens(_exact_text(nb, b))
        if ta is None or tb is None:
            return _normalize_text(a) == _normalize_text(b)
        self.pairs.append((ta, tb))
        return len(self.pairs) - 1


def _exact_text(num: _Num | None, text: str) -> str:
    """A strictly numeric side goes to sympy as its exact value ("2\\frac12" means 5/2, not 2*1/2)."""
    if num is None or num.exact is None:
        return text
    return f"(({num.exact.numerator})/({num.exact.denominator}))"


def _math_match(predicted: str, gold: str, rel_tol: float, timeout: float) -> bool:
    if max(len(predicted), len(gold)) > _MAX_MATH_CHARS:  # a paragraph, not an expression
        return _normalize_text(predicted) == _normalize_text(gold)
    a, b = _clean_math(predicted), _clean_math(gold)
    if not a or not b:
        return False
    # "x = 5" answers "5"; with "=" on both sides it is an equation comparison instead.
    if ("=" in a) != ("=" in b):
        a, b = _ASSIGN_RE.sub("", a), _ASSIGN_RE.sub("", b)
    pending = _Pending(rel_tol)
    first = pending.simple(a, b)
    if first is True:
        return True
    na, nb = _parse_number_strict(a), _parse_number_strict(b)
    if na is not None and nb is not None:
        return False  # two plain numbers: the numeric verdict is final
    ca, cb = _split_composite(a), _split_composite(b)
    if ca is not None or cb is not None:
        return _composite_match(ca, cb, rel_tol, timeout)
    if first is False:
        return False
    return _resolve(pending, timeout) == [True]


def _resolve(pending: _Pending, timeout: float) -> list[bool]:
    if not pending.pairs:
        return []
    if timeout <= 0:
        return [False] * len(pending.pairs)
    status, value = _run_with_timeout(_symbolic_equal_batch, (pending.pairs, pending.rel_tol), timeout)
    if status != "ok":
        return [False] * len(pending.pairs)
    return list(value)


def _composite_match(
    ca: tuple[str, list[str]] | None, cb: tuple[str, list[str]] | None, rel_tol: float, timeout: float
) -> bool:
    """Tuples and intervals compare in order (brackets must agree); sets and bare lists in any order."""
    if ca is None or cb is None:
        return False
    (ka, pa), (kb, pb) = ca, cb
    if len(pa) != len(pb):
        return False
    unordered = {ka, kb} <= {"", "{}"}
    if not unordered and ka != kb:
        return False
    pending = _Pending(rel_tol)
    if not unordered:
        verdicts = [pending.simple(x, y) for x, y in zip(pa, pb, strict=True)]
        if any(v is False for v in verdicts):
            return False
        results = _resolve(pending, timeout)
        return all(v is True or (not isinstance(v, bool) and results[v]) for v in verdicts)
    grid = [[pending.simple(x, y) for y in pb] for x in pa]
    results = _resolve(pending, timeout)
    ok = [[v is True or (not isinstance(v, bool) and results[v]) for v in row] for row in grid]
    return _perfect_matching(ok)


def _perfect_matching(ok: list[list[bool]]) -> bool:
    """Whether every row can be paired with a distinct column (augmenting paths; lists are short)."""
    match_of_col: dict[int, int] = {}

    def assign(r: int, seen: set[int]) -> bool:
        for c, good in enumerate(ok[r]):
            if good and c not in seen:
                seen.add(c)
                if c not in match_of_col or assign(match_of_col[c], seen):
                    match_of_col[c] = r
                    return True
        return False

    return all(assign(r, set()) for r in range(len(ok)))


# ----------------------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------------------


def answers_match(
    predicted: str | None, gold: str, answer_type: str, *, rel_tol: float = 1e-4, timeout: float = 2.0
) -> bool:
    """Whether ``predicted`` (an extracted answer) is the ``gold`` answer of type ``answer_type``.

    * number: numeric, relative tolerance ``rel_tol`` (absolute 1e-9 near zero); two integral values
      compare exactly. A percent on either side may be read either way: "50%" matches 50 and 0.5.
    * yesno: :func:`normalize_yesno` on both sides.
    * math: string-identical after LaTeX clean-up, else numeric when both are plain numbers, else
      element-wise for tuples/intervals/sets, else symbolic equivalence with sympy, bounded by ``timeout``
      seconds (overrunning counts as a mismatch).
    * text/label: case-, whitespace- and trailing-punctuation-insensitive equality.
    """
    if predicted is None or not predicted.strip():
        return False
    if answer_type == "number":
        g = _parse_number_strict(gold) or _first_number(gold)
        p = _first_number(predicted)
        if g is None:
            return _normalize_text(predicted) == _normalize_text(gold)
        return p is not None and _numbers_equal(p, g, rel_tol)
    if answer_type == "yesno":
        got = normalize_yesno(predicted)
        return got is not None and got == normalize_yesno(gold)
    if answer_type == "math":
        return _math_match(predicted, gold, rel_tol, timeout)
    if answer_type in ("text", "label"):
        label = answer_type == "label"
        return _normalize_text(predicted, label) == _normalize_text(gold, label)
    raise ValueError(f"unknown answer_type {answer_type!r}; expected number, yesno, math, text or label")
