"""The answer phrase ("The answer is", "Final answer:") and the end of the sentence that follows it."""

from __future__ import annotations

import re

_ANSWER_PHRASE_RE = re.compile(
    r"\b(?:(?:the\s+)?(?:final\s+|correct\s+|right\s+)?answer\s+is\s*:?|(?:final\s+)?answer\s*:)\s*",
    re.IGNORECASE,
)
# A period after these does not end a sentence ("approx. 18"). "No." and single letters ("B.") do.
_ABBREVIATIONS = frozenset({"approx", "e.g", "i.e", "vs", "mr", "mrs", "dr", "st", "ca", "cf"})
_CLOSERS = "*_\"')]`$"


def _sentence_end(text: str, start: int) -> int:
    """Index just past the sentence that runs from ``start``.

    A sentence ends at ".", "!" or "?" followed by whitespace or the end of text (so "2.5" and
    "$1,234.50" do not end it), outside braces, and not after a known abbreviation; or at a newline once
    some content has been seen. Closing markdown/quotes right after the terminator belong to the sentence.
    """
    depth = 0
    seen = False
    n = len(text)
    for j in range(start, n):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "\n":
            if seen:
                return j
            continue
        elif c in ".!?" and depth == 0:
            nxt = text[j + 1] if j + 1 < n else ""
            if nxt and not nxt.isspace() and nxt not in _CLOSERS:
                continue
            if c == ".":
                word = re.search(r"([\w.]+)$", text[start:j])
                if word and word.group(1).lower() in _ABBREVIATIONS:
                    continue
            end = j + 1
            while end < n and text[end] in _CLOSERS:
                end += 1
            return end
        if not c.isspace():
            seen = True
    return n
