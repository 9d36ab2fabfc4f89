"""Text preparation shared by every answer reader: unicode clean-up, LaTeX braces, ``\\boxed{}`` and markup.

``_prep_light`` keeps lengths (its output's substrings go back to the caller); ``_prep_full`` may change them
(values that are only compared). ``_strip_markup`` removes the presentation layer around an answer.
The minus-sign and vulgar-fraction tables come from :mod:`robusteval.text.normalise`.
"""

from __future__ import annotations

import re
import unicodedata

from robusteval.text.normalise import MINUS_TABLE, VULGAR_RE, vulgar_fraction


def _vulgar_sub(m: re.Match[str]) -> str:
    # VULGAR_RE takes every digit before the fraction ("12¾" -> "12"); they are copied through unchanged, so
    # the result is the same as taking only the last one.
    frac = vulgar_fraction(m.group(2))
    # "2½" is the mixed number 2 1/2, so keep a space between the whole part and the fraction.
    return (
        f"{m.group(1)} {frac.numerator}/{frac.denominator}"
        if m.group(1)
        else f"{frac.numerator}/{frac.denominator}"
    )


def _prep_light(text: str) -> str:
    """Length-preserving cleanup, safe for text whose substrings are returned to the caller."""
    return text.translate(MINUS_TABLE)  # minus look-alikes: one character for one


def _prep_full(text: str) -> str:
    """Aggressive cleanup for values that are only compared, never returned (NFKC changes lengths)."""
    text = VULGAR_RE.sub(_vulgar_sub, text)
    text = unicodedata.normalize("NFKC", text).translate(MINUS_TABLE)
    text = text.replace("\u2044", "/")  # NFKC fraction slash
    # LaTeX thousands separators: "1{,}234" and "1\,234".
    text = text.replace("{,}", ",")
    return re.sub(r"(?<=\d)\\,(?=\d{3}(?!\d))", ",", text)


def _find_braced(text: str, open_pos: int) -> int | None:
    """Index just past the brace that closes the one at ``open_pos``; None when unbalanced."""
    depth = 0
    for j in range(open_pos, len(text)):
        c = text[j]
        if c == "\\":
            continue
        if c == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif c == "}" and (j == 0 or text[j - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return j + 1
    return None


_BOXED_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*")


def _last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}``/``\\fbox{...}`` (or ``\\boxed 5``)."""
    for m in reversed(list(_BOXED_RE.finditer(text))):
        pos = m.end()
        if pos < len(text) and text[pos] == "{":
            end = _find_braced(text, pos)
            if end is not None:  # a truncated completion can leave the box unclosed: try an earlier one
                return text[pos + 1 : end - 1].strip()
        else:
            tok = re.match(r"[^\s$]+", text[pos:])
            if tok:
                return tok.group(0).rstrip(".")
    return None


_WRAP_CMDS = (
    "text",
    "textbf",
    "textrm",
    "textit",
    "mathrm",
    "mathbf",
    "mathit",
    "mbox",
    "operatorname",
    "boxed",
    "fbox",
)
_WRAP_RE = re.compile(r"\\(" + "|".join(_WRAP_CMDS) + r")\s*(?=\{)")


def _unwrap_commands(text: str) -> str:
    """Replace ``\\text{X}``, ``\\boxed{X}``, ... by `` X`` (the space keeps "5\\text{cm}" two words)."""
    while True:
        m = _WRAP_RE.search(text)
        if m is None:
            return text
        end = _find_braced(text, m.end())
        if end is None:
            return text[: m.start()] + text[m.end() + 1 :]
        inner = text[m.end() + 1 : end - 1]
        sep = " " if m.group(1) not in ("boxed", "fbox") else ""
        text = text[: m.start()] + sep + inner + text[end:]


def _strip_markup(text: str) -> str:
    """Remove the presentation layer around an answer: math delimiters, markdown, wrapping commands."""
    text = _unwrap_commands(text.strip())
    text = re.sub(r"\\[()\[\]]", " ", text)  # \( \) \[ \]
    # "$" goes without a space so "-$5" stays a number; "\\$" is an escaped dollar.
    text = text.replace("\\$", "").replace("$", "").replace("**", " ").replace("`", " ")
    return " ".join(text.split())
