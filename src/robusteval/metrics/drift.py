"""How far a perturbed text drifts from its original, by edits: pure functions, no model.

* :func:`word_tokens`: the word tokens edit distances count: runs of letters/digits, each CJK ideograph on its
  own (Chinese has no spaces, so a character is its smallest word-like unit), each other non-space symbol.
* :func:`token_edit_distance`: Levenshtein distance over those tokens (insertions, deletions, substitutions).
* :func:`char_edit_ratio`: character Levenshtein distance / length of the original (0 = unchanged; above 1
  when more was inserted than the original holds).

The embedding-level measure (cosine of sentence embeddings) is :mod:`robusteval.analysis.drift`.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Hashable, Sequence
from typing import Any

# One CJK ideograph, a run of other word characters, or one other non-space symbol.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


def word_tokens(text: str) -> list[str]:
    """``"Tom has 3 apples."`` -> ``["Tom", "has", "3", "apples", "."]``; ``"小明有3个"`` -> one token per
    ideograph and ``"3"``."""
    return _TOKEN.findall(text)


def levenshtein(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Edit distance (unit-cost insertions, deletions, substitutions) between two sequences.

    Bit-parallel (Myers 1999, in Hyyrö's form for the global distance) over Python integers, so long texts
    cost O(len(b)) big-integer operations instead of a len(a) x len(b) table; the common prefix and suffix are
    cut first, as perturbations usually touch a small part of the text."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    a, b = a[start:end_a], b[start:end_b]
    if not a or not b:
        return len(a) + len(b)
    m = len(a)
    peq: dict[Hashable, int] = {}  # symbol -> bit mask of its positions in a
    for i, symbol in enumerate(a):
        peq[symbol] = peq.get(symbol, 0) | (1 << i)
    mask = (1 << m) - 1
    top = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for symbol in b:
        eq = peq.get(symbol, 0)
        xv = eq | mv
        xh = ((((eq & pv) + pv) & mask) ^ pv) | eq
        ph = (mv | ~(xh | pv)) & mask
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & mask  # the first row of the table counts up: D[0][j] = j
        mh = (mh << 1) & mask
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
    return score


def token_edit_distance(original: str, perturbed: str) -> int:
    """Word-token Levenshtein distance (see :func:`word_tokens`)."""
    return levenshtein(word_tokens(original), word_tokens(perturbed))


def char_edit_ratio(original: str, perturbed: str) -> float:
    """Character Levenshtein distance divided by the original's length (an empty original counts as length 1,
    so inserting into nothing is the number of inserted characters)."""
    return levenshtein(original, perturbed) / max(len(original), 1)


def describe(values: Sequence[float]) -> dict[str, float | None]:
    """Mean, median and max of ``values`` (None each when empty)."""
    if not values:
        return {"mean": None, "median": None, "max": None}
    return {"mean": statistics.fmean(values), "median": float(statistics.median(values)), "max": float(max(values))}


def share_beyond(values: Sequence[float], bound: float) -> float | None:
    """The share of ``values`` strictly above ``bound`` (None when empty)."""
    return sum(1 for v in values if v > bound) / len(values) if values else None


def edit_drift(original: str, perturbed: str) -> dict[str, Any]:
    """Both edit measures of one pair."""
    return {"token_edit_distance": token_edit_distance(original, perturbed),
            "char_edit_ratio": char_edit_ratio(original, perturbed)}
