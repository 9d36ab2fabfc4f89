"""Sets of reals written other ways than interval notation, rewritten into it before comparison:
membership ("x \\in [2, 5]" is "[2, 5]"), inequalities ("2 < x \\le 5" is "(2, 5]", "x \\ge 2" is
"[2, \\infty)") and unions ("(-\\infty, 2) \\cup (5, \\infty)", compared in any order).
"""

from __future__ import annotations

import itertools
import re

# One variable, as an answer names it: "x", "t", "x_1", "\theta".
_VAR = r"(?:[A-Za-z](?:_\{?\w+\}?)?|\\[A-Za-z]+)"
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


def split_union(s: str) -> list[str] | None:
    """The parts of a top-level union ("A \\cup B"), or None when ``s`` is no union."""
    parts: list[str] = []
    depth, last = 0, 0
    for m in re.finditer(r"[([{]|[)\]}]|\\cup(?![A-Za-z])|∪", s):
        tok = m.group(0)
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        elif depth == 0:
            parts.append(s[last : m.start()].strip())
            last = m.end()
    if not parts:
        return None
    parts.append(s[last:].strip())
    return parts if all(parts) else None


def as_interval_notation(s: str) -> str:
    """``s`` with membership removed and an inequality rewritten as an interval; otherwise unchanged."""
    s = strip_membership(s)
    return inequality_to_interval(s) or s
