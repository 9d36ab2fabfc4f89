"""Deterministic arithmetic checker: a chain of thought with a false equation has wrong reasoning.

:func:`check_arithmetic` finds every equation ``lhs = rhs (= ...)`` whose sides are arithmetic over numbers
(``+ - * / ^``, also ``× x · ÷ −`` and LaTeX ``\\times \\cdot \\div \\frac{a}{b}``, parentheses, numbers like
``1,234.5``, ``$12``, ``.5``, ``20%``) and evaluates both sides exactly (fractions, no floats, no ``eval``).
The ``arith`` judge says the reasoning is wrong when any equation is false.

When is an equation true?

* Equal values, or within a relative 1e-6 when a side is not an integer (integers compare exactly).
* Honest rounding of a stated result: when one side is a single number and the other side's exact value needs
  more decimals than the numbers it was computed from (so precision was gained: ``10 / 3``, ``0.15 * 0.3``),
  the number may be that value rounded to the digits it shows (``10 / 3 = 3.33``, ``= 3.3``). A division may
  also be truncated (``2 / 3 = 0.66``) and, when the result is a whole number, rounded either way
  (``7 / 2 = 3`` whole items, ``100 / 3 = 34`` boxes); ``10 / 3 = 3.4`` is false. Without gained precision
  nothing is rounded: ``1.5 + 2.3 = 4`` is false.
* Percentages may be read as fractions or as plain numbers, consistently on both sides: ``20% * 50 = 10`` and
  ``0.25 * 100 = 25%`` are both true.
* Running totals ``5 * 4 = 20 + 3 = 23`` are read as two steps (``20 + 3`` continues from ``20``).

What is not checked (skipped, never reported false), because the text does not say what the numbers are:

* equations with words inside a side (``16 eggs - 3 = 13``) or a variable glued to a number (``2x + 3 = 7``);
* sides cut off by a word or an operator (``... = 7 + tip``), or numbers glued to ``:`` (times, ``3:30``) or
  to letters (``Q2``, ``v2``);
* dates (``2/3/2020``, ``2020-01-15``) and list labels (``Step 1 - ...``, ``Day 2 = ...``, ``#3``);
* comparisons of two bare numbers (``1 = 12``), approximations (``≈``), ``<=``, ``!=``, ``==``;
* division by zero, huge powers (exponent above 20 or a non-integer exponent).

A leading ``- `` or ``* `` at the start of a line is a list bullet, not a minus sign.

Modules: :mod:`.tokens` (normalisation and tokenizer), :mod:`.evaluate` (exact evaluation and equality),
:mod:`.equations` (finding and checking equations) and :mod:`.judge` (the ``arith`` judge, registered on
import). Every name this module held before it became a package is still importable from here, except the
tokenizer's private names ``_Tok`` and ``_tokenize``, public since as :class:`Token` and :func:`tokenize`.
"""

# Besides the public API, the private helpers are re-exported (hence the noqa): whatever was importable from
# robusteval.judges.arithmetic before the split still is. Importing .judge registers the "arith" judge.
from robusteval.judges.arithmetic.equations import (  # noqa: F401
    _BAD_LEFT,
    ArithmeticReport,
    Equation,
    _Checker,
    _first_defined,
    _Side,
    check_arithmetic,
    false_equations,
)
from robusteval.judges.arithmetic.evaluate import (  # noqa: F401
    _MAX_BITS,
    _MAX_EXPONENT,
    REL_TOL,
    _apply,
    _apply_exact,
    _close,
    _combine,
    _decimals,
    _defined,
    _fmt,
    _holds,
    _literal,
    _Parser,
    _rounded,
    _Val,
)
from robusteval.judges.arithmetic.judge import ArithmeticJudge, _arith_judge  # noqa: F401
from robusteval.judges.arithmetic.tokens import (  # noqa: F401
    _BOLD_RE,
    _BREAKS,
    _CHAR_TABLE,
    _DATE_RE,
    _LABEL_WORDS,
    _LATEX_SUBS,
    _LONE_CURRENCY_RE,
    _MAX_DIGITS,
    _TIMES_X_RE,
    _TOKEN_RE,
    Token,
    _mark_labels,
    _vulgar,
    normalize,
    tokenize,
)
from robusteval.text.normalise import VULGAR_RE as _VULGAR_RE  # noqa: F401

__all__ = [
    "REL_TOL",
    "ArithmeticJudge",
    "ArithmeticReport",
    "Equation",
    "Token",
    "check_arithmetic",
    "false_equations",
    "normalize",
    "tokenize",
]
