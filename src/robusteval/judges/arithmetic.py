"""Deterministic arithmetic checker: a chain of thought with a false equation has wrong reasoning.

:func:`check_arithmetic` finds every equation ``lhs = rhs (= ...)`` whose sides are arithmetic over numbers
(``+ - * / ^``, also ``× x · ÷ −`` and LaTeX ``\\times \\cdot \\div \\frac{a}{b}``, parentheses, numbers like
``1,234.5``, ``$12``, ``.5``, ``20%``) and evaluates both sides exactly (fractions, no floats, no ``eval``).
The ``arith`` judge says the reasoning is wrong when any equation is false.

When is an equation true?

* Equal values, or within a relative 1e-6 when a side is not an integer (integers compare exactly).
* Honest rounding of a stated result: when one side is a single number and the other side's exact value needs
  more decimals than the numbers it was computed from (so precision was gained: ``10 / 3``, ``0.15 * 0.3``),
  the number may be that value rounded to the digits it shows (``10 / 3 = 3.33``, ``= 3.3``). A division may
  also be truncated (``2 / 3 = 0.66``) and, when the result is a whole number, rounded either way
  (``7 / 2 = 3`` whole items, ``100 / 3 = 34`` boxes); ``10 / 3 = 3.4`` is false. Without gained precision
  nothing is rounded: ``1.5 + 2.3 = 4`` is false.
* Percentages may be read as fractions or as plain numbers, consistently on both sides: ``20% * 50 = 10`` and
  ``0.25 * 100 = 25%`` are both true.
* Running totals ``5 * 4 = 20 + 3 = 23`` are read as two steps (``20 + 3`` continues from ``20``).

What is not checked (skipped, never reported false), because the text does not say what the numbers are:

* equations with words inside a side (``16 eggs - 3 = 13``) or a variable glued to a number (``2x + 3 = 7``);
* sides cut off by a word or an operator (``... = 7 + tip``), or numbers glued to ``:`` (times, ``3:30``) or
  to letters (``Q2``, ``v2``);
* dates (``2/3/2020``, ``2020-01-15``) and list labels (``Step 1 - ...``, ``Day 2 = ...``, ``#3``);
* comparisons of two bare numbers (``1 = 12``), approximations (``≈``), ``<=``, ``!=``, ``==``;
* division by zero, huge powers (exponent above 20 or a non-integer exponent).

A leading ``- `` or ``* `` at the start of a line is a list bullet, not a minus sign.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from robusteval.judges.base import REASONING, BackendLoader, Judge, Verdict, check_items, register_judge

REL_TOL = Fraction(1, 10**6)
_MAX_DIGITS = 30
_MAX_EXPONENT = 20
_MAX_BITS = 2000
_LABEL_WORDS = frozenset(
    (
        "step", "steps", "day", "days", "week", "weeks", "month", "months", "year", "part", "problem", "question",
        "case", "line", "item", "phase", "stage", "round", "method", "option", "example", "equation", "eq",
        "rule", "no", "number", "chapter", "page", "level", "scenario",
    )
)  # fmt: skip

# ------------------------------------------------------------------------------------------------ normalisation
_CHAR_TABLE = str.maketrans(
    {
        "\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-",
        "\u00d7": "*", "\u2715": "*", "\u2716": "*", "\u22c5": "*", "\u00b7": "*", "\u2219": "*", "\u2217": "*",
        "\u00f7": "/", "\u2215": "/", "\uff1d": "=", "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ",
    }
)  # fmt: skip
_LATEX_SUBS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}"), r"((\1)/(\2))"),
    (re.compile(r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}"), r" \1 "),
    (re.compile(r"\\(?:times|cdot|ast)(?![A-Za-z])"), " * "),
    (re.compile(r"\\div(?![A-Za-z])"), " / "),
    (re.compile(r"\\(?:left|right)(?![A-Za-z])"), ""),
    (re.compile(r"\\[()\[\]]"), " "),
    (re.compile(r"\\([$%])"), r"\1"),
    (re.compile(r"\{,\}|(?<=\d)\\,(?=\d{3})"), ","),
    (re.compile(r"\\[!,;: ]"), " "),
]
_VULGAR_RE = re.compile(r"(\d*)([\u00bc-\u00be\u2150-\u215e])")
_BOLD_RE = re.compile(r"\*\*|__")
_DATE_RE = re.compile(r"(?<![\d/.])(?:\d{1,2}/\d{1,2}/\d{2,4}|\d{4}-\d{1,2}-\d{1,2})(?![\d/])")
_TIMES_X_RE = re.compile(r"([\d)%])(\s*)[xX](?![A-Za-z])(\s*)(?=[\d($€£¥.])")
_LONE_CURRENCY_RE = re.compile(r"[$€£¥](?!\s?[\d.])")


def _vulgar(m: re.Match[str]) -> str:
    frac = Fraction(unicodedata.numeric(m.group(2))).limit_denominator(100)
    whole = f"{m.group(1)}+" if m.group(1) else ""
    return f"({whole}{frac.numerator}/{frac.denominator})"


def normalize(text: str) -> str:
    """Unicode and LaTeX operators to ASCII, markdown bold and dates out, "2 x 3" to "2 * 3"."""
    text = _VULGAR_RE.sub(_vulgar, text.translate(_CHAR_TABLE))  # "2½" -> "(2+1/2)", "¾" -> "(3/4)"
    for pattern, repl in _LATEX_SUBS:
        text = pattern.sub(repl, text)
    text = text.replace("{", "(").replace("}", ")")  # LaTeX grouping after the commands above are gone
    text = _BOLD_RE.sub("  ", text)
    text = _DATE_RE.sub(lambda m: " date ", text)
    text = _TIMES_X_RE.sub(r"\1\2*\3", text)
    return _LONE_CURRENCY_RE.sub(" ", text)  # "$5 * 3 = 15$": a closing LaTeX dollar is not a currency


# ------------------------------------------------------------------------------------------------ tokens
_TOKEN_RE = re.compile(
    r"""
    (?P<num>(?P<cur>[$€£¥]\s?)?(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<pct>\s?%)?)
    |(?P<op>[-+*/^])
    |(?P<lp>\()
    |(?P<rp>\))
    |(?P<eq>=)
    |(?P<nl>\n)
    |(?P<ws>[ \t\r\f\v]+)
    |(?P<word>[A-Za-z_]+)
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_BREAKS = frozenset({"nl", "word", "other"})


@dataclass
class _Tok:
    kind: str
    text: str
    start: int
    end: int
    value: Fraction | None = None
    pct: bool = False
    currency: bool = False
    decimals: int = 0  # digits shown after the decimal point


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            continue
        if kind in ("num", "cur", "digits", "pct"):
            digits = m.group("digits").replace(",", "")
            if len(digits) > _MAX_DIGITS:
                tokens.append(_Tok("other", m.group(0), m.start(), m.end()))
                continue
            decimals = len(digits.partition(".")[2])
            tokens.append(
                _Tok("num", m.group("num"), m.start(), m.end(), Fraction(digits), m.group("pct") is not None,
                     m.group("cur") is not None, decimals)
            )  # fmt: skip
            continue
        if kind == "eq":
            before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
            if before in ("<", ">", "!", "=", ":") or after in ("=", ">"):
                kind = "other"  # <=, >=, !=, ==, :=, =>
        tokens.append(_Tok(kind, m.group(0), m.start(), m.end()))
    _mark_labels(tokens)
    return tokens


def _mark_labels(tokens: list[_Tok]) -> None:
    """"Step 1", "Day 2", "#3": a bare integer right after a label word is a name, not a quantity."""
    for i, tok in enumerate(tokens):
        if tok.kind != "num" or tok.pct or tok.currency or tok.decimals or i == 0:
            continue
        prev = tokens[i - 1]
        if (prev.kind == "word" and prev.text.lower() in _LABEL_WORDS) or (prev.kind == "other" and prev.text == "#"):
            tok.kind = "label"


# ------------------------------------------------------------------------------------------------ values
@dataclass
class _Val:
    """A parsed side: exact value under two percent readings ([0]: 20% = 1/5, [1]: 20% = 20)."""

    v: tuple[Fraction | None, Fraction | None]
    in_dec: tuple[int, int]  # most decimals among the input numbers, per reading
    has_div: bool = False
    single: bool = True  # one number (with an optional sign), no operator
    shown_dec: tuple[int, int] = (0, 0)  # for a single number: unit of its last shown digit, as 10^-k
    ops: int = 0
    pct: str = "none"  # "none", "all" or "some" of the input numbers are percentages


def _decimals(x: Fraction) -> float:
    """Digits after the point in the decimal expansion of ``x`` (inf when it does not terminate)."""
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    return float("inf") if d != 1 else max(twos, fives)


def _literal(tok: _Tok) -> _Val:
    assert tok.value is not None
    plain = tok.value
    frac = plain / 100 if tok.pct else plain
    # A percent read as a fraction shows two more decimals ("12.5%" = 0.125).
    shown = (tok.decimals + 2 if tok.pct else tok.decimals, tok.decimals)
    return _Val((frac, plain), (int(_decimals(frac)), int(_decimals(plain))), shown_dec=shown,
                pct="all" if tok.pct else "none")  # fmt: skip


def _combine(a: _Val, op: str, b: _Val) -> _Val:
    values: list[Fraction | None] = []
    for x, y in zip(a.v, b.v, strict=True):
        values.append(_apply(x, op, y))
    in_dec = (max(a.in_dec[0], b.in_dec[0]), max(a.in_dec[1], b.in_dec[1]))
    pct = a.pct if a.pct == b.pct else "some"
    return _Val((values[0], values[1]), in_dec, a.has_div or b.has_div or op == "/", False, (0, 0), a.ops + b.ops + 1, pct)


def _apply(x: Fraction | None, op: str, y: Fraction | None) -> Fraction | None:
    value = _apply_exact(x, op, y)
    # Values beyond ~600 digits are not arithmetic anyone checks by hand; drop them before they get costly.
    if value is not None and max(value.numerator.bit_length(), value.denominator.bit_length()) > _MAX_BITS:
        return None
    return value


def _apply_exact(x: Fraction | None, op: str, y: Fraction | None) -> Fraction | None:
    if x is None or y is None:
        return None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        return None if y == 0 else x / y
    # "^": small integer exponents only, so "10^999" cannot stall the checker.
    if y.denominator != 1 or abs(y) > _MAX_EXPONENT or (x == 0 and y < 0):
        return None
    return x ** int(y)


# ------------------------------------------------------------------------------------------------ parser
class _Parser:
    """Recursive descent over the tokens of one side: + - (left), * / (left), ^ (right), unary -, ( )."""

    def __init__(self, toks: Sequence[_Tok]):
        self.t = toks

    def _op(self, i: int, ops: str) -> bool:
        return i < len(self.t) and self.t[i].kind == "op" and self.t[i].text in ops

    def expr(self, i: int) -> tuple[_Val, int] | None:
        return self._binary(i, "+-", self.term)

    def term(self, i: int) -> tuple[_Val, int] | None:
        return self._binary(i, "*/", self.power)

    def _binary(self, i: int, ops: str, operand: Any) -> tuple[_Val, int] | None:
        first = operand(i)
        if first is None:
            return None
        val, i = first
        while self._op(i, ops):
            nxt = operand(i + 1)
            if nxt is None:
                break  # "7 +" then a word: stop before the dangling operator
            val, i = _combine(val, self.t[i].text, nxt[0]), nxt[1]
        return val, i

    def power(self, i: int) -> tuple[_Val, int] | None:
        base = self.unary(i)
        if base is None:
            return None
        val, i = base
        if self._op(i, "^"):
            exponent = self.power(i + 1)
            if exponent is not None:
                return _combine(val, "^", exponent[0]), exponent[1]
        return val, i

    def unary(self, i: int) -> tuple[_Val, int] | None:
        t = self.t
        # A sign only when glued to what it signs ("-3", "-$5"); "- 3" is a dash or a bullet.
        if self._op(i, "-+") and i + 1 < len(t) and t[i].end == t[i + 1].start and t[i + 1].kind in ("num", "lp"):
            inner = self.unary(i + 1)
            if inner is None:
                return None
            val, j = inner
            if t[i].text == "-":
                val = _Val(tuple(None if x is None else -x for x in val.v), val.in_dec, val.has_div,  # type: ignore[arg-type]
                           val.single, val.shown_dec, val.ops, val.pct)  # fmt: skip
            return val, j
        return self.primary(i)

    def primary(self, i: int) -> tuple[_Val, int] | None:
        t = self.t
        if i >= len(t):
            return None
        if t[i].kind == "num":
            return _literal(t[i]), i + 1
        if t[i].kind == "lp":
            inner = self.expr(i + 1)
            if inner is None or inner[1] >= len(t) or t[inner[1]].kind != "rp":
                return None
            val, j = inner
            return _Val(val.v, val.in_dec, val.has_div, False, (0, 0), val.ops, val.pct), j + 1
        return None


# ------------------------------------------------------------------------------------------------ equations
@dataclass(frozen=True)
class Equation:
    """One checked equality between two adjacent sides of an ``=`` chain."""

    text: str
    left: str
    right: str
    left_value: str
    right_value: str
    holds: bool
    note: str = ""

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("text", "left", "right", "left_value", "right_value", "holds", "note")}


@dataclass(frozen=True)
class ArithmeticReport:
    equations: tuple[Equation, ...] = field(default_factory=tuple)

    @property
    def false(self) -> tuple[Equation, ...]:
        return tuple(e for e in self.equations if not e.holds)

    @property
    def ok(self) -> bool:
        return not self.false


@dataclass
class _Side:
    toks: list[_Tok]
    val: _Val
    label_like: bool = False  # a bare number right after a word: "Week 3 = 5 * 7" names week 3


_BAD_LEFT = re.compile(r"[A-Za-z0-9_.:,/^#@']")


def _close(x: Fraction, y: Fraction) -> bool:
    if x == y:
        return True
    if x.denominator == 1 and y.denominator == 1:
        return False
    return abs(x - y) <= REL_TOL * max(abs(x), abs(y))


def _rounded(expr: _Val, lit: _Val, r: int) -> bool:
    """Is ``lit`` an honest rounding of ``expr`` under reading ``r``? (see module docstring)."""
    x, y = expr.v[r], lit.v[r]
    assert x is not None and y is not None
    exact = _decimals(x)
    if exact <= expr.in_dec[r] or lit.shown_dec[r] >= exact:
        return False  # no precision was gained, or the number shows every digit and still differs
    ulp = Fraction(1, 10 ** lit.shown_dec[r])
    diff = abs(x - y)
    if diff * 2 <= ulp:
        return True  # rounded to nearest
    # A division may be truncated ("2 / 3 = 0.66"), and counted in whole items either way ("100 / 3 = 34").
    return expr.has_div and diff < ulp and (abs(y) <= abs(x) or lit.shown_dec[r] == 0)


def _holds(a: _Val, b: _Val) -> bool:
    for r in (0, 1):
        x, y = a.v[r], b.v[r]
        if x is None or y is None:
            continue
        if _close(x, y):
            return True
        for expr, lit in ((a, b), (b, a)):
            if lit.single and not expr.single and _rounded(expr, lit, r):
                return True
    return False


def _defined(val: _Val) -> bool:
    return any(x is not None for x in val.v)


def _fmt(x: Fraction | None) -> str:
    if x is None:
        return "undefined"
    if x.denominator == 1:
        return str(x)
    try:
        approx = float(x)
    except OverflowError:  # more than ~1e308: keep the exact fraction only
        return str(x)
    if _decimals(x) <= 12:
        return f"{approx:.12f}".rstrip("0").rstrip(".")
    return f"{x} (~{approx:.6g})"


class _Checker:
    def __init__(self, text: str):
        self.text = normalize(text)
        self.tokens = _tokenize(self.text)

    def _before(self, pos: int) -> str:
        # A bounded window keeps the checker linear in the length of the text.
        return self.text[max(0, pos - 40) : pos]

    def _line_start(self, tok: _Tok) -> bool:
        line = self.text[self.text.rfind("\n", 0, tok.start) + 1 : tok.start]
        return not line.strip() or line.rstrip().endswith(":")

    def _open_left(self, first: _Tok) -> bool:
        """Whether an expression may start at ``first``, judging by the text before it."""
        before = self._before(first.start).rstrip()
        if not before:
            return True
        # "3x +4 - 4": a leading sign after a term is the binary operator of a longer expression.
        if first.kind == "op" and re.search(r"(?:\d|(?<![A-Za-z])[A-Za-z]|[)\].])$", before):
            return False
        # "x 3/3", "n 5 + 2": a lone variable letter just before (articles "a"/"I" are words).
        word = re.search(r"(?<![A-Za-z])([A-Za-z])$", before)
        return word is None or word.group(1) in ("a", "A", "I")

    def _after_label(self, index: int) -> bool:
        return index > 0 and self.tokens[index - 1].kind == "label"

    def segments(self) -> list[tuple[int, list[_Tok]]]:
        """Runs of arithmetic tokens between words, newlines and other text: (index of first token, tokens)."""
        out: list[tuple[int, list[_Tok]]] = []
        current: list[_Tok] = []
        start = 0
        for i, tok in enumerate(self.tokens):
            if tok.kind in _BREAKS or tok.kind == "label":
                if current:
                    out.append((start, current))
                current = []
                start = i + 1
            else:
                current.append(tok)
        if current:
            out.append((start, current))
        return out

    def left_side(self, first_index: int, toks: list[_Tok]) -> _Side | None:
        """The longest tail of the leftmost part that is a whole expression, if nothing cuts it off."""
        for s in range(len(toks)):
            parsed = _Parser(toks[s:]).expr(0)
            if parsed is None or parsed[1] != len(toks) - s:
                continue
            if s == 0:
                before = self.text[toks[0].start - 1 : toks[0].start]
                if before and _BAD_LEFT.match(before):
                    return None  # glued to a letter, digit, ":" ...: part of something larger
                if not self._open_left(toks[0]):
                    return None
            else:
                prev = toks[s - 1]
                bullet = (
                    s == 1
                    and prev.kind == "op"
                    and prev.text in "-*+"
                    and prev.end < toks[s].start
                    and (self._line_start(prev) or self._after_label(first_index))
                )
                if prev.kind not in ("lp", "rp") and not bullet:
                    return None  # "2x + 3": the expression started before a word
            val = parsed[0]
            label_like = False
            if val.single and not toks[s].currency and not toks[s].pct:
                before = self._before(toks[s].start).rstrip()
                label_like = bool(before) and before[-1].isalpha()
            return _Side(toks[s:], val, label_like)
        return None

    def right_side(self, toks: list[_Tok]) -> _Side | None:
        """The longest head of the rightmost part that is an expression, if it is not cut off."""
        parsed = _Parser(toks).expr(0)
        if parsed is None:
            return None
        val, end = parsed
        if end < len(toks):
            if toks[end].kind not in ("lp", "rp"):
                return None  # followed by an operator or another number: the side goes on
        else:
            after = self.text[toks[-1].end : toks[-1].end + 2]
            if re.match(r"[A-Za-z](?![A-Za-z])|[:_^]|[.,]\d", after):
                return None  # "= 7x", "= 3:30", "= 7,5"
        return _Side(toks[:end], val)

    def middle_side(self, toks: list[_Tok]) -> _Side | None:
        parsed = _Parser(toks).expr(0)
        if parsed is None or parsed[1] != len(toks):
            return None
        return _Side(toks, parsed[0])

    def equations(self) -> list[Equation]:
        found: list[Equation] = []
        for first_index, seg in self.segments():
            parts: list[list[_Tok]] = [[]]
            for tok in seg:
                if tok.kind == "eq":
                    parts.append([])
                else:
                    parts[-1].append(tok)
            if len(parts) < 2:
                continue
            sides: list[_Side | None] = []
            for k, part in enumerate(parts):
                if not part:
                    sides.append(None)
                elif k == 0:
                    sides.append(self.left_side(first_index, part))
                elif k == len(parts) - 1:
                    sides.append(self.right_side(part))
                else:
                    sides.append(self.middle_side(part))
            for k in range(len(sides) - 1):
                eq = self._compare(sides[k], sides[k + 1], parts[k + 1])
                if eq is not None:
                    found.append(eq)
        return found

    def _compare(self, a: _Side | None, b: _Side | None, b_part: list[_Tok]) -> Equation | None:
        if a is None or b is None or not _defined(a.val) or not _defined(b.val):
            return None
        if a.val.single and b.val.single:
            return None  # "1 = 12": nothing was computed
        if a.label_like and a.val.single:
            return None
        holds, note = _holds(a.val, b.val), ""
        if not holds and (a.val.pct, b.val.pct) in (("all", "none"), ("none", "all")):
            return None  # "48 = 120%" (of something): a correspondence, not an arithmetic identity
        # Running total "5 * 4 = 20 + 3 = 23": the next side continues from this result.
        if not holds and not b.val.single and b_part[0].kind == "num" and _holds(a.val, _literal(b_part[0])):
            holds, note = True, "running total"
        left = self.text[a.toks[0].start : a.toks[-1].end]
        right = self.text[b.toks[0].start : b.toks[-1].end]
        text = self.text[a.toks[0].start : b.toks[-1].end]
        return Equation(text, left, right, _fmt(_first_defined(a.val)), _fmt(_first_defined(b.val)), holds, note)


def _first_defined(val: _Val) -> Fraction | None:
    return next((x for x in val.v if x is not None), None)


def check_arithmetic(text: str) -> ArithmeticReport:
    """Every checkable equation in ``text``, each marked true or false."""
    return ArithmeticReport(tuple(_Checker(text).equations()))


def false_equations(text: str) -> list[Equation]:
    return list(check_arithmetic(text).false)


# ------------------------------------------------------------------------------------------------ judge
class ArithmeticJudge:
    """The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation.

    Only the candidate response is checked (the paper's rule); the question and reference are ignored.
    """

    name = "arith"
    task = REASONING
    deterministic = True
    identity: ClassVar[dict[str, Any]] = {"name": "arith", "task": REASONING, "version": 1}

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        check_items(self.task, items)
        verdicts = []
        for item in items:
            report = check_arithmetic(item.candidate)
            bad = report.false
            raw = (
                f"{len(report.equations)} equation(s) checked, {len(bad)} false"
                + (": " + "; ".join(e.text for e in bad) if bad else "")
            )
            detail = {
                "method": "arithmetic",
                "n_equations": len(report.equations),
                "false_equations": [e.to_record() for e in bad],
            }
            verdicts.append(Verdict(not bad, self.name, raw, detail))
        return verdicts


@register_judge("arith")
def _arith_judge(task: str, spec: str, load: BackendLoader) -> Judge:
    from robusteval.errors import UserError

    if task != REASONING:
        raise UserError("judge 'arith' checks reasoning only; it cannot judge whether two questions mean the same")
    return ArithmeticJudge()
