"""Marks over text for the example browsers: what an attack changed and what a judge flagged.

A text block is ``{"t": text, "m": [[start, end, css_class, tooltip], ...]}`` (code-point offsets into ``t``,
sorted, non-overlapping); the page's script renders each mark as a highlighted span with its tooltip and
never parses the text as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Mark = list[Any]  # [start, end, css_class, tooltip]

def text_block(text: Any, marks: Iterable[Mark] = ()) -> dict[str, Any]:
    """``{"t", "m"}`` with the marks clipped to the text, sorted, and overlaps dropped (first one wins).

    Trailing whitespace is cut (a completion that ends in newlines up to its token limit would make a one-line
    answer box hundreds of pixels tall); leading whitespace stays, as mark offsets count from the start."""
    value = "" if text is None else str(text).rstrip()
    kept: list[Mark] = []
    cursor = 0
    for start, end, css, tip in sorted(marks, key=lambda m: (m[0], m[1])):
        start, end = max(0, int(start)), min(len(value), int(end))
        if start < cursor or end <= start:
            continue
        kept.append([start, end, css, tip])
        cursor = end
    return {"t": value, "m": kept} if kept else {"t": value}


def perturbation_marks(edits: Sequence[Mapping[str, Any]] | None, method: str | None = None
                       ) -> tuple[list[Mark], list[Mark]]:
    """Marks on the original text and on the perturbed text for perturbation edits, whose offsets are into the
    *original* text (``perturbations.base.Edit``); the perturbed offsets shift by each earlier length change."""
    before: list[Mark] = []
    after: list[Mark] = []
    shift = 0
    for edit in sorted(edits or (), key=lambda e: (int(e["start"]), int(e["end"]))):
        start, end = int(edit["start"]), int(edit["end"])
        original, replacement = str(edit.get("original", "")), str(edit.get("replacement", ""))
        tip = f"{edit.get('method') or method or 'edit'}: '{original}' → '{replacement}'"
        before.append([start, end, "del", tip])
        after.append([start + shift, start + shift + len(replacement), "rep", tip])
        shift += len(replacement) - (end - start)
    return before, after


#: Characters the arithmetic checker rewrites before it reports an equation (``judges.arithmetic.normalize``):
#: a reported ``*`` may stand for "x" or "×" in the text, and so on.
_OPERATOR_FORMS = {"*": "[*x×·∙]", "/": "[/÷∕]", "-": "[-−–]", "(": "[(\\[{]", ")": "[)\\]}]"}


def find_span(text: str, needle: str) -> tuple[int, int] | None:
    """Where ``needle`` occurs in ``text``: exactly, else token by token with any spacing between tokens and an
    operator matching its other spellings (a checker reports ``2 * 7 = 6`` for the text's ``2 x 7 = 6``)."""
    needle = needle.strip()
    if not needle:
        return None
    at = text.find(needle)
    if at >= 0:
        return at, at + len(needle)
    tokens = re.findall(r"\d+(?:[.,]\d+)*|[A-Za-z]+|\S", needle)
    pattern = r"\s*".join(_OPERATOR_FORMS.get(t, re.escape(t)) for t in tokens)
    match = re.search(pattern, text)
    return (match.start(), match.end()) if match else None


def flagged_spans(verdict: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(text, why) for every span a reasoning verdict flags: the arithmetic checker's false equations and the
    grounding judge's issues, in combined verdicts too (``detail.members``)."""
    out: list[tuple[str, str]] = []
    if not verdict:
        return out
    detail = verdict.get("detail") or {}
    judge = verdict.get("judge", "judge")
    for member in detail.get("members") or ():
        out += flagged_spans(member)
    for equation in detail.get("false_equations") or ():
        text = equation.get("text") if isinstance(equation, Mapping) else equation
        if text:
            values = ""
            if isinstance(equation, Mapping) and equation.get("left_value") is not None:
                values = f" (left side is {equation['left_value']}, right side {equation.get('right_value')})"
            out.append((str(text), f"{judge}: false equation{values}"))
    issues = detail.get("issues") or ([detail] if detail.get("method") == "grounding" and detail.get("span") else [])
    for issue in issues:
        if isinstance(issue, Mapping) and issue.get("span"):
            reason = issue.get("reason") or issue.get("category") or "flagged"
            quantity = f" ({issue['quantity']})" if issue.get("quantity") else ""
            out.append((str(issue["span"]), f"{judge}: {issue.get('category') or 'issue'}{quantity}: {reason}"))
    return out


def verdict_marks(text: str, verdicts: Iterable[Mapping[str, Any] | None]) -> tuple[list[Mark], list[str]]:
    """Marks for every flagged span found in ``text``, and the flagged spans that could not be found."""
    marks: list[Mark] = []
    missing: list[str] = []
    for verdict in verdicts:
        for span, why in flagged_spans(verdict):
            where = find_span(text, span)
            if where is None:
                missing.append(f"{span} ({why})")
            else:
                marks.append([where[0], where[1], "flag", why])
    return marks, missing
