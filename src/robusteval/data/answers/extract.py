"""Reading the answer out of a completion: answer-first ("The answer is 18. Because ...") and final-answer
(last ``\\boxed{}``, else last "the answer is", else last number) extraction.
"""

from __future__ import annotations

import re

from robusteval.data.answers.markup import _last_boxed, _prep_light, _strip_markup
from robusteval.data.answers.numbers import _FACTORIAL_RE, _iter_numbers, _Num
from robusteval.data.answers.phrases import _ANSWER_PHRASE_RE, _sentence_end
from robusteval.data.answers.wordnumbers import find_word_number
from robusteval.data.answers.yesno import _YESNO, _YESNO_RE

# "!" (numbers._FACTORIAL_RE) is a factorial, not an exclamation mark, when math mode closes right after it
# ("$5!$", "\\(5!\\)", "\\boxed{5!}").
_MATH_CLOSE_RE = re.compile(r"\s*(?:\$|\\\)|\\\]|\})")
_TRAILING_FACTORIAL_RE = re.compile(r"!\s*(?:\$|\\\)|\\\]|\})[\s.,;:!?*_]*$")


def _clean_segment(segment: str, *, math_mode: bool = False) -> str | None:
    """An answer phrase's tail, presentation stripped: "$\\boxed{18}$." -> "18".

    A trailing "!" ends a sentence ("The answer is 18!") unless the segment is math (``math_mode``: the
    content of a box) or math mode closes right after it ("$5!$."): then it is a factorial.
    """
    s = segment.strip()
    keep_bang = math_mode or _TRAILING_FACTORIAL_RE.search(s) is not None
    s = _strip_markup(s)
    s = s.strip().rstrip(".?,;:" if keep_bang else ".!?,;:").strip()
    s = s.strip("\"'*_`").strip()
    return s or None


def _answer_from_segment(segment: str, answer_type: str, *, math_mode: bool = False) -> str | None:
    """Read an answer of ``answer_type`` from the text that follows "The answer is" (``math_mode``: from the
    content of a box)."""
    if answer_type == "number":
        prepared = _prep_light(segment)
        num = next(_iter_numbers(prepared), None)
        if num is not None:
            return _token_text(prepared, num, math_mode=math_mode)
        word = find_word_number(prepared)
        return prepared[word.start : word.end] if word else None
    if answer_type == "yesno":
        m = _YESNO_RE.search(segment)
        return _YESNO[m.group(1).lower()] if m else None
    # "The answer is 5 because 2+3=5" names 5; the justification is not part of the answer.
    segment = re.split(r"(?:,\s*|\s+)(?:because|since)\b", segment, maxsplit=1, flags=re.IGNORECASE)[0]
    return _clean_segment(_prep_light(segment), math_mode=math_mode)


def _token_text(prepared: str, num: _Num, *, math_mode: bool = False) -> str:
    """A number as written; "$18$" is math mode rather than dollars, so its "$" is dropped. A factorial sign
    belongs to the number in math ("$5!$", a box's "5!"), never in prose ("I got 18! Then ...")."""
    end = num.end
    if _FACTORIAL_RE.match(prepared, end) and (math_mode or _MATH_CLOSE_RE.match(prepared, end + 1)):
        end += 1
    token = prepared[num.start : end].strip()
    if token.startswith("$") and prepared.startswith("$", end):
        token = token[1:]
    return token


def extract_answer_first(text: str, answer_type: str) -> str | None:
    """The answer stated by the FIRST "The answer is X" (or "answer: X") in an answer-first completion.

    For numbers, X is the first number in that sentence, returned as written ("$1,234.50", "-3", "3/4",
    "50%"; "\\boxed{5}" gives "5"); for yes/no, "yes" or "no"; otherwise the sentence's tail with
    markup removed. None when there is no such phrase or it names no answer of that type.
    """
    m = _ANSWER_PHRASE_RE.search(text)
    if m is None:
        return None
    segment = text[m.end() : _sentence_end(text, m.end())]
    return _answer_from_segment(segment, answer_type)


def split_answer_and_cot(text: str) -> tuple[str, str]:
    """Split an answer-first completion into ``(answer_sentence, cot)``.

    ``answer_sentence`` runs from the first "The answer is" to the end of its sentence ("The answer is
    $1,234.50." stays whole). ``cot`` is everything else, stripped: the text after that sentence, preceded
    by any text before it (normally none) so reasoning is never silently dropped. Without the phrase:
    ``("", text.strip())``.
    """
    m = _ANSWER_PHRASE_RE.search(text)
    if m is None:
        return "", text.strip()
    start = m.start()
    while start > 0 and text[start - 1] in "*_":  # "**The answer is 18.**" keeps its bold markers together
        start -= 1
    end = _sentence_end(text, m.end())
    before, after = text[:start].strip(), text[end:].strip()
    cot = f"{before} {after}".strip() if before else after
    return text[start:end].strip(), cot


def extract_final_answer(text: str, answer_type: str = "math") -> str | None:
    """The final answer of a free-form solution, as a raw string.

    Order: the last complete ``\\boxed{...}``/``\\fbox{...}`` (balanced braces); else the last "the answer
    is ..."/"answer: ..."; else the last number in the text (for yes/no: the last yes/no word). For
    ``answer_type="number"`` the first number inside the chosen answer is returned; for "yesno", "yes"/"no".
    Text and label answers have no reliable last-resort, so they give None without a box or phrase.
    """
    light = _prep_light(text)
    boxed = _last_boxed(light)
    if boxed:
        got = _answer_from_segment(boxed, answer_type, math_mode=True)
        if got is not None:
            return got
    for m in reversed(list(_ANSWER_PHRASE_RE.finditer(light))):
        got = _answer_from_segment(light[m.end() : _sentence_end(light, m.end())], answer_type)
        if got is not None:
            return got
    if answer_type == "yesno":
        words = _YESNO_RE.findall(light)
        return _YESNO[words[-1].lower()] if words else None
    if answer_type in ("number", "math"):
        nums = list(_iter_numbers(light))
        if nums:
            return _token_text(light, nums[-1])
    return None
