"""Draft a template from a fixed problem (behind ``variants draft``): the tedious part of template writing.

Every number :func:`~robusteval.variants.numbers.find_numbers` finds becomes a variable whose domain keeps the
original's kind (an integer stays an integer, a decimal keeps its decimals and print format, thousands keep
their commas), sign and roundness (1000 varies in steps of 100), around the original value. Constraints keep
the relations of the original: the order of same-kind numbers whose domains overlap (``b < a``), fractions in
lowest terms, percentages within 0..100 and proportions below 1. The same number written twice is one
variable. The answer is left to the author: :data:`~robusteval.variants.template.DRAFT_ANSWER`, which every
loader refuses with a message saying so, and the original answer is kept in ``original_answer`` (and in a
comment) so ``variants check`` can test the expression the author writes.

The YAML is written here, line by line, so it can carry comments; every scalar is checked to read back as
written (:func:`_scalar`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import yaml

from robusteval.variants.expr import RESERVED
from robusteval.variants.numbers import Number, find_numbers
from robusteval.variants.template import DRAFT_ANSWER, FORMAT_VERSION, PLACEHOLDER_RE

_NAMES = [c for c in "abcdfghkmnpqrstuvwxyz" if c not in RESERVED]
MAX_HALF_STEPS = 50  # a domain spans at most ±50 steps around the original value


@dataclass
class DraftVariable:
    name: str
    number: Number  # its first occurrence
    start: Fraction
    stop: Fraction  # excluded, as in a template range
    step: Fraction
    format: str | None
    occurrences: int = 1

    @property
    def lo(self) -> Fraction:
        return self.start

    @property
    def hi(self) -> Fraction:
        return self.stop - self.step

    def literal(self, value: Fraction) -> str:
        return _decimal(value, self.number.decimals)


@dataclass
class TemplateDraft:
    """One drafted template; :meth:`to_yaml` gives a file, :func:`drafts_yaml` a file of several."""

    id: str
    question: str  # with {{placeholders}}
    original_question: str
    original_answer: Any
    variables: list[DraftVariable] = field(default_factory=list)
    constraints: list[tuple[str, str]] = field(default_factory=list)  # (expression, why)
    fixed: list[str] = field(default_factory=list)  # numbers left as written, with the reason
    notes: list[str] = field(default_factory=list)
    source: str | None = None

    def to_yaml(self) -> str:
        return drafts_yaml([self])

    def yaml_lines(self) -> list[str]:
        return _template_lines(self)


# ----------------------------------------------------------------------------------------------- domains
def _decimal(value: Fraction, decimals: int) -> str:
    """``value`` as an exact decimal literal with ``decimals`` places at most (no float noise)."""
    if decimals == 0 and value.denominator == 1:
        return str(value.numerator)
    scaled = value * 10**decimals
    sign = "-" if scaled < 0 else ""
    digits = str(abs(scaled.numerator // scaled.denominator) if scaled.denominator == 1 else abs(round(scaled)))
    digits = digits.rjust(decimals + 1, "0")
    whole, frac = digits[:-decimals], digits[-decimals:].rstrip("0")
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def _domain(number: Number) -> tuple[Fraction, Fraction, Fraction]:
    """(start, stop excluded, step) around the original: same sign, decimals and roundness."""
    unit = Fraction(1, 10**number.decimals)
    m = int(abs(number.value) / unit)  # the magnitude in units of the last written digit (>= 1)
    zeros = len(str(m)) - len(str(m).rstrip("0"))
    # Keep the original's roundness (1000 varies by 100s) while the window still holds 5 multiples.
    while zeros and sum(1 for k in range(m // 2, m * 3 // 2 + 1) if k % 10**zeros == 0) < 5:
        zeros -= 1
    step = 10**zeros
    half = max(3 * step, (m // 2) // step * step)
    half = min(half, MAX_HALF_STEPS * step)
    lo, hi = max(step, m - half), m + half
    if number.role == "denominator" and m >= 2:
        lo = max(lo, 2)
    hundred = 100 * 10**number.decimals
    if number.percent and m <= hundred:
        hi = min(hi, hundred)
    elif number.percent:  # above 100% (an increase by 150%) stays above
        lo = max(lo, hundred + step - hundred % step)
    elif number.decimals and m < 10**number.decimals:  # a proportion below 1 stays below 1
        hi = min(hi, 10**number.decimals - step)
    if number.value < 0:
        lo, hi = -hi, -lo
    return lo * unit, (hi + step) * unit, step * unit


def _format(number: Number) -> str | None:
    if number.decimals:
        return f"{',' if number.thousands else ''}.{number.decimals}f"
    return "," if number.thousands else None


# ----------------------------------------------------------------------------------------------- drafting
def draft_template(
    question: str, answer: Any = None, *, id: str = "problem", source: str | None = None
) -> TemplateDraft:
    """A draft template of one problem: variables for its numbers, constraints, the answer left to write."""
    found = find_numbers(question)
    draft = TemplateDraft(
        id=str(id), question=question, original_question=question, original_answer=_answer_value(answer),
        source=source,
    )
    kept = Counter(f"{f.written} ({f.reason})" for f in found.fixed)
    draft.fixed = [text if count == 1 else f"{text} x{count}" for text, count in kept.items()]
    names = iter(_NAMES + [f"{c}{k}" for k in range(1, 100) for c in _NAMES])
    by_key: dict[tuple[str, bool, str], DraftVariable] = {}
    assigned: list[DraftVariable] = []
    for number in found.numbers:
        key = (number.written, number.percent, number.role)
        if number.role == "number" and key in by_key:
            variable = by_key[key]
            variable.occurrences += 1
        else:
            start, stop, step = _domain(number)
            variable = DraftVariable(next(names), number, start, stop, step, _format(number))
            draft.variables.append(variable)
            if number.role == "number":
                by_key[key] = variable
        assigned.append(variable)
    parts, at = [], 0
    for number, variable in zip(found.numbers, assigned, strict=True):
        parts += [question[at:number.start], "{{" + variable.name + "}}"]
        at = number.end
    draft.question = "".join(parts) + question[at:]
    draft.constraints = _constraints(draft.variables, found.numbers, assigned)
    foreign = sorted({m.group(1) for m in PLACEHOLDER_RE.finditer(question)})
    if foreign:
        draft.notes.append(
            "the text already holds " + ", ".join("{{" + n + "}}" for n in foreign)
            + ", which the template format reads as placeholders: rewrite it (e.g. '{ {x} }')"
        )
    if not draft.variables:
        draft.notes.append("no number to vary was found: add variables and {{placeholders}} by hand")
    return draft


def _answer_value(answer: Any) -> Any:
    """The original answer as a number when it is one ("1,000" -> 1000, "2.5" -> 2.5), else the text."""
    if answer is None or (isinstance(answer, int | float) and not isinstance(answer, bool)):
        return int(answer) if isinstance(answer, float) and answer.is_integer() else answer
    text = str(answer).strip()
    plain = text.replace(",", "") if find_numbers(text).numbers and "," in text else text
    try:
        value = Fraction(plain)
    except (ValueError, ZeroDivisionError):
        return text
    if "/" in plain:
        return text
    return int(value) if value.denominator == 1 else float(value)


def _overlap(a: DraftVariable, b: DraftVariable) -> bool:
    return a.lo <= b.hi and b.lo <= a.hi


def _constraints(
    variables: list[DraftVariable], numbers: list[Number], assigned: list[DraftVariable]
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    # Order between numbers of one kind (plain numbers; percentages; the two parts of each fraction), kept
    # only where the domains overlap: elsewhere it holds anyway. Consecutive pairs imply the whole order.
    groups: dict[Any, list[DraftVariable]] = {}
    for number, variable in zip(numbers, assigned, strict=True):
        if number.role != "number":
            key: Any = ("fraction", min(variable.name, assigned[number.pair].name))  # type: ignore[index]
        else:
            key = "percent" if number.percent else "plain"
        members = groups.setdefault(key, [])
        if variable not in members:
            members.append(variable)
    for members in groups.values():
        ordered = sorted(members, key=lambda v: v.number.value)
        for a, b in itertools.pairwise(ordered):
            if a.number.value < b.number.value and _overlap(a, b):
                out.append((f"{a.name} < {b.name}", f"as in the original: {a.number.written} < {b.number.written}"))
    for number, variable in zip(numbers, assigned, strict=True):
        if number.role == "numerator":
            den = assigned[number.pair]  # type: ignore[index]
            n, d = int(abs(number.value)), int(den.number.value)
            if d > 1 and math.gcd(n, d) == 1:
                out.append((f"gcd({variable.name}, {den.name}) == 1",
                            f"{number.written}/{den.number.written} is in lowest terms"))
    for variable in variables:
        number = variable.number
        if number.percent and abs(number.value) <= 100:
            out.append((f"0 <= {variable.name} <= 100", "a percentage"))
        elif number.percent:
            out.append((f"{variable.name} > 100", "a percentage above 100, as in the original"))
        elif number.decimals and 0 < abs(number.value) < 1:
            out.append((f"0 < {variable.name} < 1" if number.value > 0 else f"-1 < {variable.name} < 0",
                        "a proportion below 1, as in the original"))
    return out


# ----------------------------------------------------------------------------------------------- YAML
def _reads_as(text: str, value: Any) -> bool:
    try:
        loaded = yaml.safe_load(f"k: {text}\n")
    except yaml.YAMLError:
        return False
    return isinstance(loaded, dict) and loaded.get("k") == value and type(loaded["k"]) is type(value)


def _scalar(value: Any) -> str:
    """``value`` as a YAML flow scalar that reads back equal: plain when it can, else double-quoted."""
    if isinstance(value, Fraction):
        value = int(value) if value.denominator == 1 else float(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    text = str(value) if isinstance(value, int | float) else value
    if _reads_as(text, value) and "#" not in text and "\n" not in text:
        return text
    quoted = json.dumps(value, ensure_ascii=False)
    if _reads_as(quoted, value):
        return quoted
    dumped = yaml.safe_dump(value, default_style='"', allow_unicode=True, width=10**9).strip()
    return dumped.removesuffix("...").strip()


def _block(text: str, indent: str) -> list[str] | None:
    """``text`` as a ``|-`` literal block (backslashes and quotes as written) when it reads back exactly."""
    if not text or text != text.strip("\n") or text[0] in " \t":
        return None
    lines = [f"{indent}{line}" if line else "" for line in text.split("\n")]
    try:
        loaded = yaml.safe_load("k: |-\n" + "\n".join(lines) + "\n")
    except yaml.YAMLError:
        return None
    return lines if isinstance(loaded, dict) and loaded.get("k") == text else None


def _range_text(variable: DraftVariable) -> str:
    d = variable.number.decimals
    start, stop, step = (_decimal(x, d) for x in (variable.start, variable.stop, variable.step))
    return f"[{start}, {stop}]" if variable.step == 1 else f"[{start}, {stop}, {step}]"


def _template_lines(draft: TemplateDraft) -> list[str]:
    pad = "    "
    out = [f"  - id: {_scalar(draft.id)}"]
    if draft.source:
        out.append(f"{pad}source: {_scalar(draft.source)}")
    for note in draft.notes:
        out.append(f"{pad}# NOTE: {note}")
    if draft.fixed:
        out.append(f"{pad}# kept as written: {', '.join(draft.fixed)}")
    block = _block(draft.question, pad + "  ")
    if block is not None:
        out += [f"{pad}question: |-", *block]
    else:
        out.append(f"{pad}question: {_scalar(draft.question)}")
    if draft.variables:
        out.append(f"{pad}variables:")
        rows = []
        for v in draft.variables:
            fmt = f", format: {_scalar(v.format)}" if v.format else ""
            lo, hi = v.literal(v.lo), v.literal(v.hi)
            seen = f", {v.occurrences} times" if v.occurrences > 1 else ""
            kind = "percentage" if v.number.percent else v.number.role if v.number.role != "number" else (
                "integer" if v.number.is_integer else f"{v.number.decimals} decimal{'s' if v.number.decimals > 1 else ''}")
            rows.append((f"{pad}  {v.name}: {{range: {_range_text(v)}{fmt}}}",
                         f"# {v.number.written}{seen} in the original ({kind}); {lo} .. {hi}"))
        out += _aligned(rows)
    if draft.constraints:
        out.append(f"{pad}constraints:")
        out += _aligned([(f"{pad}  - {_scalar(expr)}", f"# {why}") for expr, why in draft.constraints])
    names = ", ".join(v.name for v in draft.variables) or "the variables"
    shown = "unknown" if draft.original_answer is None else _scalar(draft.original_answer)
    out.append(f"{pad}answer: {DRAFT_ANSWER}  # write it as an expression of {names}; the original answer is {shown}")
    if draft.variables:
        originals = ", ".join(f"{v.name}: {v.literal(v.number.value)}" for v in draft.variables)
        out.append(f"{pad}original: {{{originals}}}")
    if draft.original_answer is not None:
        out.append(f"{pad}original_answer: {_scalar(draft.original_answer)}")
    if draft.variables:
        out.append(f"{pad}exclude_original: true")
    return out


def _aligned(rows: Sequence[tuple[str, str]]) -> list[str]:
    width = max(len(code) for code, _ in rows) + 2
    return [f"{code.ljust(width)}{comment}" for code, comment in rows]


def drafts_yaml(drafts: Iterable[TemplateDraft]) -> str:
    """A template file of drafts: loads as it is once every ``answer`` is written."""
    lines = [
        "# Drafted by `robusteval variants draft`. For each template: check the domains and constraints, write",
        f"# the answer expression in place of {DRAFT_ANSWER}, then run:  robusteval variants check THIS_FILE",
        f"version: {FORMAT_VERSION}",
        "templates:",
    ]
    for k, draft in enumerate(drafts):
        if k:
            lines.append("")
        lines += draft.yaml_lines()
    return "\n".join(lines) + "\n"
