"""Finding the equations of a text and checking each: :func:`check_arithmetic` and :func:`false_equations`.

Tokens are split into runs between words and newlines; each ``=`` chain is cut into sides, and a side that a
word, an operator or a glued letter/digit cuts off is skipped rather than reported false.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from robusteval.judges.arithmetic.evaluate import _defined, _fmt, _holds, _literal, _Parser, _Val
from robusteval.judges.arithmetic.tokens import _BREAKS, Token, normalize, tokenize


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
    toks: list[Token]
    val: _Val
    label_like: bool = False  # a bare number right after a word: "Week 3 = 5 * 7" names week 3


_BAD_LEFT = re.compile(r"[A-Za-z0-9_.:,/^#@']")


class _Checker:
    def __init__(self, text: str):
        self.text = normalize(text)
        self.tokens = tokenize(self.text)

    def _before(self, pos: int) -> str:
        # A bounded window keeps the checker linear in the length of the text.
        return self.text[max(0, pos - 40) : pos]

    def _line_start(self, tok: Token) -> bool:
        line = self.text[self.text.rfind("\n", 0, tok.start) + 1 : tok.start]
        return not line.strip() or line.rstrip().endswith(":")

    def _open_left(self, first: Token) -> bool:
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

    def segments(self) -> list[tuple[int, list[Token]]]:
        """Runs of arithmetic tokens between words, newlines and other text: (index of first token, tokens)."""
        out: list[tuple[int, list[Token]]] = []
        current: list[Token] = []
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

    def left_side(self, first_index: int, toks: list[Token]) -> _Side | None:
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

    def right_side(self, toks: list[Token]) -> _Side | None:
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

    def middle_side(self, toks: list[Token]) -> _Side | None:
        parsed = _Parser(toks).expr(0)
        if parsed is None or parsed[1] != len(toks):
            return None
        return _Side(toks, parsed[0])

    def equations(self) -> list[Equation]:
        found: list[Equation] = []
        for first_index, seg in self.segments():
            parts: list[list[Token]] = [[]]
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

    def _compare(self, a: _Side | None, b: _Side | None, b_part: list[Token]) -> Equation | None:
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
