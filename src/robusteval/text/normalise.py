"""Character tables for reading numbers out of model text: one home for every reader that needs them.

Both the answer grader (:mod:`robusteval.data.answers`) and the arithmetic judge
(:mod:`robusteval.judges.arithmetic`) meet the same unicode look-alikes in completions: minus signs that are
not ASCII ``-`` and vulgar fractions (``½``, ``2¾``). The tables live here so the two cannot drift apart; each
user decides how to render what it finds (the grader writes ``2½`` as the mixed number ``2 1/2``, the judge as
the expression ``(2+1/2)``).
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

__all__ = ["MINUS_SIGNS", "MINUS_TABLE", "VULGAR_RE", "vulgar_fraction"]

#: Minus look-alikes models emit, each mapped to ASCII ``-``: one character for one, so offsets stay valid.
MINUS_SIGNS: dict[str, str] = {"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"}

#: :data:`MINUS_SIGNS` as a ``str.translate`` table.
MINUS_TABLE = str.maketrans(MINUS_SIGNS)

#: A vulgar fraction character (``¼``-``¾``, ``⅐``-``⅞``) with the digits written right before it:
#: group 1 is the whole part ("" when none), group 2 the fraction character. A match starts only where a digit
#: run starts and takes the run whole (possessive): ``(\d*)`` tried from every position backtracked
#: quadratically on a long digit string (5,000 digits: 1.4 s).
VULGAR_RE = re.compile(r"(?<!\d)(\d*+)([\u00bc-\u00be\u2150-\u215e])")


def vulgar_fraction(char: str) -> Fraction:
    """The value of one vulgar fraction character: ``"¾"`` -> ``Fraction(3, 4)``, ``"⅓"`` -> ``1/3``."""
    return Fraction(unicodedata.numeric(char)).limit_denominator(100)
