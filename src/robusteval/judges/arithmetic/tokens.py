"""Text to arithmetic tokens: unicode and LaTeX operators to ASCII (:func:`normalize`), then numbers,
operators, ``=`` and the words/newlines that cut an equation off (:func:`tokenize`).

:class:`Token` and :func:`tokenize` are public: the grounding judge reads a chain's numbers with them.

The minus-sign and vulgar-fraction tables are shared with the answer grader
(:mod:`robusteval.text.normalise`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from robusteval.text.normalise import MINUS_SIGNS, VULGAR_RE, vulgar_fraction

_MAX_DIGITS = 30
_LABEL_WORDS = frozenset(
    (
        "step", "steps", "day", "days", "week", "weeks", "month", "months", "year", "part", "problem", "question",
        "case", "line", "item", "phase", "stage", "round", "method", "option", "example", "equation", "eq",
        "rule", "no", "number", "chapter", "page", "level", "scenario",
    )
)  # fmt: skip

# ------------------------------------------------------------------------------------------------ normalisation
# The shared minus look-alikes, plus times/divide/equals signs and unusual spaces.
_CHAR_TABLE = str.maketrans(
    {
        **MINUS_SIGNS,
        "\u00d7": "*", "\u2715": "*", "\u2716": "*", "\u22c5": "*", "\u00b7": "*", "\u2219": "*", "\u2217": "*",
        "\u00f7": "/", "\u2215": "/", "\uff1d": "=", "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ",
    }
)  # fmt: skip
_LATEX_SUBS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}"), r"((\1)/(\2))"),
    (re.compile(r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}"), r" \1 "),
    (re.compile(r"\\(?:times|cdot|ast)(?![A-Za-z])"), " * "),
    (re.compile(r"\\div(?![A-Za-z])"), " / "),
    (re.compile(r"\\(?:left|right)(?![A-Za-z])"), ""),
    (re.compile(r"\\[()\[\]]"), " "),
    (re.compile(r"\\([$%])"), r"\1"),
    (re.compile(r"\{,\}|(?<=\d)\\,(?=\d{3})"), ","),
    (re.compile(r"\\[!,;: ]"), " "),
]
_BOLD_RE = re.compile(r"\*\*|__")
_DATE_RE = re.compile(r"(?<![\d/.])(?:\d{1,2}/\d{1,2}/\d{2,4}|\d{4}-\d{1,2}-\d{1,2})(?![\d/])")
_TIMES_X_RE = re.compile(r"([\d)%])(\s*)[xX](?![A-Za-z])(\s*)(?=[\d($€£¥.])")
_LONE_CURRENCY_RE = re.compile(r"[$€£¥](?!\s?[\d.])")


def _vulgar(m: re.Match[str]) -> str:
    frac = vulgar_fraction(m.group(2))
    whole = f"{m.group(1)}+" if m.group(1) else ""
    return f"({whole}{frac.numerator}/{frac.denominator})"


def normalize(text: str) -> str:
    """Unicode and LaTeX operators to ASCII, markdown bold and dates out, "2 x 3" to "2 * 3"."""
    text = VULGAR_RE.sub(_vulgar, text.translate(_CHAR_TABLE))  # "2½" -> "(2+1/2)", "¾" -> "(3/4)"
    for pattern, repl in _LATEX_SUBS:
        text = pattern.sub(repl, text)
    text = text.replace("{", "(").replace("}", ")")  # LaTeX grouping after the commands above are gone
    text = _BOLD_RE.sub("  ", text)
    text = _DATE_RE.sub(lambda m: " date ", text)
    text = _TIMES_X_RE.sub(r"\1\2*\3", text)
    return _LONE_CURRENCY_RE.sub(" ", text)  # "$5 * 3 = 15$": a closing LaTeX dollar is not a currency


# ------------------------------------------------------------------------------------------------ tokens
_TOKEN_RE = re.compile(
    r"""
    (?P<num>(?P<cur>[$€£¥]\s?)?(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<pct>\s?%)?)
    |(?P<op>[-+*/^])
    |(?P<lp>\()
    |(?P<rp>\))
    |(?P<eq>=)
    |(?P<nl>\n)
    |(?P<ws>[ \t\r\f\v]+)
    |(?P<word>[A-Za-z_]+)
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_BREAKS = frozenset({"nl", "word", "other"})


@dataclass
class Token:
    """One token: ``kind`` is num, op, lp, rp, eq, nl, word, label ("Step 2"'s 2) or other."""

    kind: str
    text: str
    start: int
    end: int
    value: Fraction | None = None
    pct: bool = False
    currency: bool = False
    decimals: int = 0  # digits shown after the decimal point


def tokenize(text: str) -> list[Token]:
    """``text`` (already :func:`normalize`-d) as tokens; whitespace is dropped, offsets index ``text``."""
    tokens: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            continue
        if kind in ("num", "cur", "digits", "pct"):
            digits = m.group("digits").replace(",", "")
            if len(digits) > _MAX_DIGITS:
                tokens.append(Token("other", m.group(0), m.start(), m.end()))
                continue
            decimals = len(digits.partition(".")[2])
            tokens.append(
                Token("num", m.group("num"), m.start(), m.end(), Fraction(digits), m.group("pct") is not None,
                     m.group("cur") is not None, decimals)
            )  # fmt: skip
            continue
        if kind == "eq":
            before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
            if before in ("<", ">", "!", "=", ":") or after in ("=", ">"):
                kind = "other"  # <=, >=, !=, ==, :=, =>
        tokens.append(Token(kind, m.group(0), m.start(), m.end()))
    _mark_labels(tokens)
    return tokens


def _mark_labels(tokens: list[Token]) -> None:
    """"Step 1", "Day 2", "#3": a bare integer right after a label word is a name, not a quantity."""
    for i, tok in enumerate(tokens):
        if tok.kind != "num" or tok.pct or tok.currency or tok.decimals or i == 0:
            continue
        prev = tokens[i - 1]
        if (prev.kind == "word" and prev.text.lower() in _LABEL_WORDS) or (prev.kind == "other" and prev.text == "#"):
            tok.kind = "label"
