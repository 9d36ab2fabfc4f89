"""Answers that name a set, a list or a ratio in other words than the gold answer, rewritten to one form
before comparison: membership ("x \\in [2, 5]" is "[2, 5]"), inequalities ("2 < x \\le 5" is "(2, 5]",
"x \\ge 2" is "[2, \\infty)"), unions ("(-\\infty, 2) \\cup (5, \\infty)", compared in any order),
named sets ("\\mathbb{R}", "\\emptyset"), alternatives ("x=2 or x=3", "\\pm 2"), assignment lists
("a=2, b=3" is the tuple "(2, 3)") and ratios ("3:4" is 3/4).
"""

from __future__ import annotations

import itertools
import re

# One variable, as an answer names it: "x", "t", "x_1", "\theta" (not the constants "\pi", "\infty").
_LETTER_VAR = r"[A-Za-z](?:_\{?\w+\}?)?"  # a letter, maybe with a subscript: "x", "x_1", "a_{10}"
_VAR = rf"(?:{_LETTER_VAR}|\\(?!(?:pi|infty)(?![A-Za-z]))[A-Za-z]+)"
_MEMBERSHIP_RE = re.compile(rf"^\s*{_VAR}\s*(?:\\in(?![A-Za-z])|∈)\s*(?=\S)")
_LESS = {"<": "<", r"\lt": "<", "≤": "<=", "<=": "<=", r"\le": "<=", r"\leq": "<=", r"\leqslant": "<="}
_GREATER = {">": ">", r"\gt": ">", "≥": ">=", ">=": ">=", r"\ge": ">=", r"\geq": ">=", r"\geqslant": ">="}
_REL = "|".join(re.escape(r) for r in sorted({**_LESS, **_GREATER}, key=len, reverse=True))
_REL_RE = re.compile(rf"(?:{_REL})(?![A-Za-z])")
_CUP_RE = re.compile(r"\\cup(?![A-Za-z])|∪")


def strip_membership(s: str) -> str:
    """"x \\in [2, 5]" -> "[2, 5]": an answer that names its variable names the same set."""
    return _MEMBERSHIP_RE.sub("", s, count=1)


def _bound(side: str) -> str | None:
    side = side.strip()
    return side if side and not re.fullmatch(_VAR, side) and "=" not in side else None


def inequality_to_interval(s: str) -> str | None:
    """Interval notation for "a < x \\le b", "b \\ge x > a", "x > a", "a \\ge x", ...; None for anything else
    (an equation, "2 < x > 5", a relation between two expressions)."""
    rels = list(_REL_RE.finditer(s))
    if not rels or len(rels) > 2:
        return None
    parts = [s[: rels[0].start()], *(s[a.end() : b.start()] for a, b in itertools.pairwise(rels)),
             s[rels[-1].end() :]]
    ops = [m.group(0) for m in rels]
    var_at = [i for i, p in enumerate(parts) if re.fullmatch(rf"\s*{_VAR}\s*", p)]
    if len(var_at) != 1:
        return None
    v = var_at[0]
    lower = upper = None  # (bound, closed)
    for i, op in enumerate(ops):  # relation i stands between parts i and i + 1
        if v not in (i, i + 1):
            return None
        var_on_right = (i + 1 == v) != (op in _GREATER)  # "2 < x" and "x > 2" both make 2 a lower bound
        closed = {**_LESS, **_GREATER}[op].endswith("=")
        bound = _bound(parts[i] if i + 1 == v else parts[i + 1])
        if bound is None or (lower if var_on_right else upper) is not None:
            return None  # not a bound, or two lower (two upper) bounds: "2 < x > 5"
        if var_on_right:
            lower = (bound, closed)
        else:
            upper = (bound, closed)
    lo = f"[{lower[0]}" if lower and lower[1] else f"({lower[0]}" if lower else "(-\\infty"
    hi = f"{upper[0]}]" if upper and upper[1] else f"{upper[0]})" if upper else "\\infty)"
    return f"{lo}, {hi}"


def _split_outside_brackets(s: str, separator: str) -> list[str]:
    """``s`` split at the matches of the regex ``separator`` that stand outside (), [] and {}."""
    parts: list[str] = []
    depth, last = 0, 0
    for m in re.finditer(rf"[([{{]|[)\]}}]|{separator}", s):
        tok = m.group(0)
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        elif depth == 0:
            parts.append(s[last : m.start()].strip())
            last = m.end()
    parts.append(s[last:].strip())
    return parts


def split_union(s: str) -> list[str] | None:
    """The parts of a top-level union ("A \\cup B"), or None when ``s`` is no union."""
    parts = _split_outside_brackets(s, _CUP_RE.pattern)
    return parts if len(parts) > 1 and all(parts) else None


_NAMED_SETS = (
    (re.compile(r"\\(?:emptyset|varnothing)(?![A-Za-z])|∅"), "\\{\\}"),
    (re.compile(r"\\mathbb\s*\{?\s*R\s*\}?|ℝ"), "(-\\infty, \\infty)"),
)
_RATIO_RE = re.compile(r"(\d+)\s*:\s*(\d+)")
_ASSIGNMENT_RE = re.compile(r"\s*([A-Za-z](?:_\{?\w+\}?)?)\s*=\s*(\S.*)", re.DOTALL)
_PM_RE = re.compile(r"\\pm(?![A-Za-z])|±")


def canonical_form(s: str) -> str:
    """``s`` with named sets spelled out, a ratio as a fraction, membership removed and an inequality
    rewritten as an interval; otherwise unchanged."""
    for pattern, replacement in _NAMED_SETS:
        if pattern.fullmatch(s.strip()):
            return replacement
    ratio = _RATIO_RE.fullmatch(s.strip())
    if ratio:
        return f"\\frac{{{ratio.group(1)}}}{{{ratio.group(2)}}}"
    s = strip_membership(s)
    return inequality_to_interval(s) or s


def split_top_level(s: str, *, words: bool = False) -> list[str]:
    """``s`` split at commas outside brackets (and at the words "or"/"and" when ``words``)."""
    return _split_outside_brackets(s, r",|\s+(?:or|and)\s+" if words else ",")


def rewrite_assignment_list(s: str) -> str:
    """"a=2, b=3" -> "(2, 3)", the values in the order of their variables' names (a tuple); "x=2 or x=3" ->
    "2, 3" (one variable's values: a list in any order). Anything else unchanged."""
    parts = split_top_level(s, words=True)
    matches = [_ASSIGNMENT_RE.fullmatch(p) for p in parts]
    if len(parts) < 2 or not all(matches):
        return s
    pairs = [(m.group(1), m.group(2).strip()) for m in matches if m]
    names = [name for name, _ in pairs]
    if len(set(names)) == len(names):
        return "(" + ", ".join(value for _, value in sorted(pairs)) + ")"
    if len(set(names)) == 1:
        return ", ".join(value for _, value in pairs)
    return s


def expand_plus_minus(s: str) -> list[str] | None:
    """["1+\\sqrt{2}", "1-\\sqrt{2}"] for "1 \\pm \\sqrt{2}" (one top-level ±); None otherwise."""
    signs = list(_PM_RE.finditer(s))
    if len(signs) != 1 or len(split_top_level(s)) != 1:
        return None
    before = s[: signs[0].start()]
    if sum(before.count(c) for c in "([{") != sum(before.count(c) for c in ")]}"):
        return None  # inside brackets: "(1 \pm 2, 3)" is not two answers
    head, tail = before.strip(), s[signs[0].end() :].strip()
    if not tail:
        return None
    negated = f"-{tail}" if re.fullmatch(r"[\w.\\{}]+", tail) else f"-({tail})"
    return [f"{head}+{tail}", f"{head}-({tail})"] if head else [tail, negated]
