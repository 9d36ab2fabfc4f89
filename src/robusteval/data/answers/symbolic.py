"""Symbolic equality with sympy: a tokenizer for the plain text :mod:`.latex` writes, a recursive-descent
parser to sympy expressions (never ``eval``/``exec``) and the batch entry point that runs in a worker process.

Tokenizing happens in the parent; :func:`_symbolic_equal_batch` is sent to a :mod:`robusteval.workers` process
(it must stay a picklable module-level function) and is the only code here that imports sympy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from robusteval.data.answers.latex import _CONSTS, _FUNCS, _GREEK, Token, _latex_to_plain, _Unsupported

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
            if math.isinf(abs(va)) or math.isinf(abs(vb)):
                # A relative tolerance of infinity is infinite: "\infty" (or 100000!, beyond float range)
                # would equal every number. Infinities are equal only to themselves; overflowing values
                # are left to the exact checks below.
                if va == vb and (a.is_infinite or b.is_infinite):
                    return True
            else:
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
    """Worker entry point: one bool per pair; a pair that sympy cannot parse or compare is unequal. Any other
    exception is a bug in the grader and propagates (the caller raises it), never read as a wrong answer."""
    unusable = _sympy_refusals()
    results = []
    for ta, tb in pairs:
        try:
            results.append(bool(_symbolic_equal_one(ta, tb, rel_tol)))
        except unusable:
            results.append(False)
    return results


def _sympy_refusals() -> tuple[type[BaseException], ...]:
    """What sympy and :class:`_Parser` raise on input they cannot handle: the parser's ValueError ("trailing
    tokens"), sympy's SympifyError (a ValueError) and TypeError on bad arguments (``factorial`` of a
    non-integer), ArithmeticError (overflow, division by zero), NotImplementedError (``simplify``/``equals``
    on forms it does not cover), the polynomial errors (``BasePolynomialError``: PolynomialError,
    CoercionFailed, …) and RecursionError on deeply nested input."""
    import sympy as sp
    from sympy.polys.polyerrors import BasePolynomialError

    return (sp.SympifyError, TypeError, ValueError, ArithmeticError, NotImplementedError, RecursionError,
            BasePolynomialError)
