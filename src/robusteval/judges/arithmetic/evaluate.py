"""Exact evaluation of one side of an equation, and whether two sides are equal.

A recursive-descent parser over the tokens of :mod:`.tokens` computes each side with fractions (no floats, no
``eval``) under two percent readings; :func:`_holds` decides equality, allowing honest rounding of a stated
result (see the package docstring, :mod:`robusteval.judges.arithmetic`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from robusteval.judges.arithmetic.tokens import Token

REL_TOL = Fraction(1, 10**6)
_MAX_EXPONENT = 20
_MAX_BITS = 2000


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


def _literal(tok: Token) -> _Val:
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

    def __init__(self, toks: Sequence[Token]):
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


# ------------------------------------------------------------------------------------------------ equality
def _close(x: Fraction, y: Fraction) -> bool:
    if x == y:
        return True
    if x.denominator == 1 and y.denominator == 1:
        return False
    return abs(x - y) <= REL_TOL * max(abs(x), abs(y))


def _rounded(expr: _Val, lit: _Val, r: int) -> bool:
    """Is ``lit`` an honest rounding of ``expr`` under reading ``r``? (see the package docstring)."""
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
