"""Text and label answers: the normal form two answers are compared in (case, whitespace, trailing
punctuation, one pair of enclosing brackets; for labels also "option"/"choice" prefixes and "b)")."""

from __future__ import annotations

import re
import unicodedata

from robusteval.data.answers.markup import _strip_markup

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
