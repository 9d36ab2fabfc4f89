"""Whether an extracted answer is the gold answer: :func:`answers_match` and the math comparison behind it
(LaTeX clean-up, numbers, tuples/intervals/sets element-wise, then sympy in a worker bounded by a timeout).
"""

from __future__ import annotations

import re

from robusteval.data.answers.latex import Token
from robusteval.data.answers.markup import _last_boxed, _prep_full, _strip_markup
from robusteval.data.answers.numbers import (
    _first_number,
    _is_unit_word,
    _Num,
    _numbers_equal,
    _parse_number_strict,
)
from robusteval.data.answers.setforms import (
    _LETTER_VAR,
    canonical_form,
    expand_plus_minus,
    rewrite_assignment_list,
    split_top_level,
    split_union,
)
from robusteval.data.answers.symbolic import _symbolic_equal_batch, _to_tokens
from robusteval.data.answers.textnorm import _normalize_text
from robusteval.data.answers.yesno import normalize_yesno
from robusteval.workers import WORKER_DIED
from robusteval.workers import run_with_timeout as _run_with_timeout

_MAX_MATH_CHARS = 1000
_ASSIGN_RE = re.compile(rf"^\s*{_LETTER_VAR}\s*=\s*(?=\S)")  # "x = 3", "a_1 = 3": the letter is dropped


def _clean_math(text: str) -> str:
    s = _prep_full(text).strip()
    boxed = _last_boxed(s)
    if boxed is not None:
        s = boxed
    s = _strip_markup(s)
    s = re.sub(r"\\(?:left|right)(?![A-Za-z])", "", s)
    s = re.sub(r"\\(?:displaystyle|textstyle)(?![A-Za-z])|\\[!,;: ]", " ", s)
    s = re.sub(r"\\[dtc]frac(?![A-Za-z])", r"\\frac", s)
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?|°", "", s).replace("∞", "\\infty ")
    s = " ".join(s.split()).rstrip(".").strip()
    # Trailing unit words ("5\sqrt{2} cm") after something math-like; not "twenty one" or "one half".
    m = re.search(r"(?<=[\d})a-zA-Z])(\s+[A-Za-z]{2,}(?:\^\d)?)+$", s)
    if m and all(_is_unit_word(w) for w in re.findall(r"[A-Za-z]+", m.group(0))):
        s = s[: m.start()].strip()
    return s


def _split_composite(s: str) -> tuple[str, list[str]] | None:
    """("()", ["1", "2"]) for "(1, 2)"; ("{}", ...) for sets; ("", ...) for a bare list "1, 2", "7 and 8" or
    "1 \\pm \\sqrt{2}"."""
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
    parts = split_top_level(inner, words=not kind)
    if len(parts) < 2 and not kind:
        parts = expand_plus_minus(inner) or parts
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
    return _match_clean(_clean_math(predicted), _clean_math(gold), rel_tol, timeout)


def _match_clean(a: str, b: str, rel_tol: float, timeout: float) -> bool:
    """:func:`_math_match` on two cleaned answers."""
    if not a or not b:
        return False
    # "x \in [2, 5]" and "2 \le x \le 5" both answer "[2, 5]"; "a=2, b=3" answers "(2, 3)".
    a, b = rewrite_assignment_list(canonical_form(a)), rewrite_assignment_list(canonical_form(b))
    # "x = 5" answers "5"; with "=" on both sides it is an equation comparison instead.
    if ("=" in a) != ("=" in b):
        a, b = _ASSIGN_RE.sub("", a), _ASSIGN_RE.sub("", b)
    ua, ub = split_union(a), split_union(b)
    if ua is not None or ub is not None:
        return _union_match(ua, ub, rel_tol, timeout)
    pending = _Pending(rel_tol)
    first = pending.simple(a, b)
    if first is True:
        return True
    na, nb = _parse_number_strict(a), _parse_number_strict(b)
    if na is not None and nb is not None:
        return False  # two plain numbers: the numeric verdict is final
    # A plain number is never a list: "1,000,000" is one number, "one hundred and five" another.
    ca = _split_composite(a) if na is None else None
    cb = _split_composite(b) if nb is None else None
    if ca is not None or cb is not None:
        return _composite_match(ca, cb, a, b, rel_tol, timeout)
    if first is False:
        return False
    return _resolve(pending, timeout) == [True]


def _union_match(ua: list[str] | None, ub: list[str] | None, rel_tol: float, timeout: float) -> bool:
    """Unions of sets match part for part, in any order."""
    if ua is None or ub is None or len(ua) != len(ub):
        return False
    return _perfect_matching([[_match_clean(x, y, rel_tol, timeout) for y in ub] for x in ua])


def _resolve(pending: _Pending, timeout: float) -> list[bool]:
    if not pending.pairs:
        return []
    if timeout <= 0:
        return [False] * len(pending.pairs)
    status, value = _run_with_timeout(_symbolic_equal_batch, (pending.pairs, pending.rel_tol), timeout)
    if status == "err" and value != WORKER_DIED:
        # The batch turns what sympy refuses into "unequal"; anything else is a bug in the grader, not a wrong
        # answer (a worker killed for memory, like an overrun, is still "unequal").
        raise RuntimeError(f"symbolic answer comparison failed: {value}")
    if status != "ok":
        return [False] * len(pending.pairs)
    return list(value)


def _composite_match(
    ca: tuple[str, list[str]] | None, cb: tuple[str, list[str]] | None, a: str, b: str, rel_tol: float,
    timeout: float,
) -> bool:
    """Tuples and intervals compare in order (brackets must agree); sets and bare lists in any order; a
    one-element set is its element ("\\{2\\}" answers "2")."""
    if ca is None or cb is None:
        single, other = (ca, b) if cb is None else (cb, a)
        if single is not None and single[0] == "{}" and len(single[1]) == 1:
            return _match_clean(single[1][0], other, rel_tol, timeout)
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
        # A whole answer read as one number first: "5!" is 120, "one hundred and five" is 105.
        p = _parse_number_strict(predicted) or _first_number(predicted)
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
