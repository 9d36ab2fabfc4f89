"""Yes/no answers: "Yes", "**YES**, because", "True", "\\boxed{No}" and "the answer is no" to "yes"/"no"."""

from __future__ import annotations

import re

from robusteval.data.answers.markup import _prep_light, _strip_markup
from robusteval.data.answers.phrases import _ANSWER_PHRASE_RE, _sentence_end

_YESNO = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_YESNO_RE = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)


def normalize_yesno(text: str) -> str | None:
    """Return "yes"/"no" for answers like "Yes", "yes.", "**YES**, because", "True", "\\boxed{No}"; else None.

    Only the leading word decides (a stray "no" deep inside a sentence is not an answer), with one
    exception: text that states "the answer is X" is read at X.
    """
    s = _strip_markup(_prep_light(text)).lower()
    s = s.lstrip(" \t\n\"'([{*_:>-")
    m = re.match(r"(yes|no|true|false)\b", s)
    if m:
        return _YESNO[m.group(1)]
    if s.rstrip(".!") in ("y", "n"):
        return "yes" if s[0] == "y" else "no"
    phrase = _ANSWER_PHRASE_RE.search(s)
    if phrase:
        seg = s[phrase.end() : _sentence_end(s, phrase.end())]
        m2 = _YESNO_RE.search(seg)
        if m2:
            return _YESNO[m2.group(1).lower()]
    return None
