"""The ``grounding`` reasoning judge: every quantity a chain of thought uses must come from the question.

Deterministic and offline, like ``arith``, which it complements (``arith+grounding``): ``arith`` finds false
equations, ``grounding`` finds quantities that have no business in the chain. The candidate's reasoning is
wrong when one of these rules fires (each issue names the offending sentence and quantity):

* **ungrounded quantity** (wrong information): a number that is neither *known* nor *derived*. Known: the
  question's numbers (digits, "three", "3/4", "20%" as 20 and 0.2, "twice", "half", "a dozen"), the reference
  solution's numbers, 0 and 1, the unit factors whose unit the texts mention (60 with minutes or hours, 100
  with cents, percent or metres, 7 with weeks, 12 with dozens or months, ...) and each equation's results
  (both the stated result and the true value of its left side: a false equation is ``arith``'s finding, not
  this judge's). Derived: one ``+ - * /`` step from two known quantities written in prose ("she eats 3,
  leaving 13"); a derived number becomes known in turn, so the order of the steps does not matter. A number
  may also be a known one converted by a mentioned unit factor (2 hours = 120 minutes), or a rounding of one
  when it shows decimals (33.33 for 100/3).
* **contradicted quantity** (wrong information): a question fact restated with another question number ("Tom
  has 3 apples" restated as "Tom has 5 apples", where 5 is the question's price): the same two words before
  the number and the same word after it.
* **dropped quantity** (wrong information): a number the question states and the reference solution uses that
  the candidate never uses, in any unit.
* **irrelevant step** (irrelevant information): a sentence whose new quantities lead nowhere (no other
  sentence uses them and they are not the answer) and that brings in an ungrounded quantity, computes a value
  the reference never needs, or only restates question numbers the reference does not use. An ungrounded
  quantity that does feed the chain is wrong information instead.

Self-corrections are honoured: a sentence (or clause) starting "wait", "actually", "oops", "correction", "I
mean", "let me fix" ... retracts the sentence before it, whose numbers are then ignored. An answer sentence
("The answer is 18.") is set aside before checking; the answer is what a dead-end step may still reach.

A chain that states no quantity at all and has no issue leaves nothing to ground: the judge abstains (label
None, ``detail["abstained"] = "nothing to ground"``) rather than calling it correct.

``Verdict.detail``: ``{"method": "grounding", "category", "span", "quantity", "reason", "issues": [...]}``
(category, span and quantity of the first issue; ``None`` when there is none). See ``docs/judges.md``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from robusteval.data.answers import extract_answer_first, split_answer_and_cot
from robusteval.data.answers.wordnumbers import find_word_number
from robusteval.judges.arithmetic import Token, check_arithmetic, normalize, tokenize
from robusteval.judges.base import (
    DeterministicReasoningJudge,
    ReasoningItem,
    Verdict,
    reasoning_only,
    register_judge,
)
from robusteval.judges.error_categories import IRRELEVANT_INFORMATION, WRONG_INFORMATION

TRIVIAL = (Fraction(0), Fraction(1))
#: Unit factors and the words that make each one known (and usable to convert a known quantity).
UNIT_FACTORS: dict[int, str] = {
    60: r"minutes?|mins?|hours?|hrs?|seconds?|secs?",
    3600: r"seconds?|secs?",
    24: r"hours?|hrs?|days?",
    7: r"weeks?|weekly",
    12: r"dozens?|months?|monthly|inch(?:es)?|feet|foot",
    100: r"cents?|percent|%|centimet(?:er|re)s?|cm|met(?:er|re)s?",
    1000: r"grams?|kilograms?|kg|g|millilit(?:er|re)s?|ml|lit(?:er|re)s?|kilomet(?:er|re)s?|km|thousands?",
    365: r"years?|yearly|annual(?:ly)?",
    52: r"weeks?|weekly",
    3: r"yards?",
    16: r"ounces?|oz|pounds?|lbs?",
    4: r"quarts?|gallons?",
}
_UNIT_RES = {Fraction(f): re.compile(rf"(?:\b(?:{words})\b)" + ("|%" if f == 100 else ""), re.IGNORECASE)
             for f, words in UNIT_FACTORS.items()}
# Words that state a quantity without a digit: "twice as many" is a 2 the chain may use.
MULTIPLIER_WORDS = {
    "twice": 2, "double": 2, "doubles": 2, "half": 2, "halves": 2, "pair": 2, "pairs": 2, "both": 2,
    "triple": 3, "thrice": 3, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
    "fifth": 5, "tenth": 10, "dozen": 12, "dozens": 12,
}  # fmt: skip
_CORRECTION_RE = re.compile(
    r"^\W*(?:wait|oops|actually|correction|sorry|hmm|no,|scratch that|i mean|let me (?:re)?(?:check|correct|fix)"
    r"|that should be|that's wrong|that is wrong|i made a mistake)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+|[,:]\s+(?=(?:wait|oops|actually|correction|no,)\s)", re.IGNORECASE)
_WORD_RE = re.compile(r"[a-z]+")
_PERCENT_WORD_RE = re.compile(r"\s*percent\b", re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    """One number of a text: the values it may stand for ("20%" is 20 or 1/5), where it is, decimals shown."""

    values: tuple[Fraction, ...]
    text: str
    start: int
    decimals: int = 0


@dataclass
class Step:
    """One sentence of a chain: numbers outside equations (mentions), equation operands and results."""

    text: str
    mentions: list[Quantity] = field(default_factory=list)
    operands: list[Quantity] = field(default_factory=list)
    results: list[Fraction] = field(default_factory=list)
    retracted: bool = False

    @property
    def quantities(self) -> list[Quantity]:
        return self.mentions + self.operands

    @property
    def values(self) -> set[Fraction]:
        return {v for q in self.quantities for v in q.values} | set(self.results)


def quantities(text: str) -> list[Quantity]:
    """The numbers of ``text`` (normalised): digits, percentages and spelled-out numbers, left to right.

    List labels ("Step 2") and numbers glued to letters ("2nd", "Q3") or to a colon ("3:30") are not quantities.
    Both numbers of a written fraction ("2/5") stand for the fraction first, and for themselves.
    """
    toks = tokenize(text)
    fractions = _written_fractions(toks)
    out = []
    for index, tok in enumerate(toks):
        if tok.kind != "num" or tok.value is None:
            continue
        before, after = text[tok.start - 1 : tok.start], text[tok.end : tok.end + 1]
        if before.isalpha() or after.isalpha() or ":" in (before, after):
            continue
        percent = tok.pct or bool(_PERCENT_WORD_RE.match(text, tok.end))
        values = (tok.value, tok.value / 100) if percent else (tok.value,)
        if index in fractions:
            values = (fractions[index], *values)
        out.append(Quantity(values, tok.text, tok.start, tok.decimals))
    out.extend(_spelled(text))
    return sorted(out, key=lambda q: q.start)


def _spelled(text: str) -> Iterator[Quantity]:
    """The spelled-out numbers of ``text``, read as the answer grader reads them ("one hundred and five" is 105).

    A signed one ("minus seven") stands for its value and for its size: "minus" may be the operation in
    "twenty minus seven", and a digit "-7" is read as 7 with the sign as an operator.
    """
    pos = 0
    while (word := find_word_number(text, pos)) is not None:
        value = Fraction(word.value)
        out = (value, -value) if value < 0 else (value,)
        yield Quantity(out, text[word.start : word.end], word.start)
        pos = word.end


def _written_fractions(toks: Sequence[Token]) -> dict[int, Fraction]:
    """Token index -> value of the fraction it belongs to, for "a/b" written without spaces."""
    out: dict[int, Fraction] = {}
    for i in range(len(toks) - 2):
        a, op, b = toks[i], toks[i + 1], toks[i + 2]
        if (a.kind == b.kind == "num" and op.text == "/" and a.end == op.start and op.end == b.start
                and a.value is not None and b.value and not a.decimals and not b.decimals):
            out[i] = out[i + 2] = a.value / b.value
    return out


def question_values(question: str) -> set[Fraction]:
    """Every value the question states: its numbers, "3/4" as one value too, and multiplier words."""
    return _Question.read(question).values


@dataclass(frozen=True)
class _Question:
    """The question read once: its normalised text, its numbers, and every value it states."""

    text: str
    quantities: list[Quantity]
    values: set[Fraction]

    @classmethod
    def read(cls, question: str) -> _Question:
        text = normalize(question)
        found = quantities(text)
        values = {v for q in found for v in q.values}
        values |= {Fraction(MULTIPLIER_WORDS[w]) for w in _WORD_RE.findall(text.lower()) if w in MULTIPLIER_WORDS}
        return cls(text, found, values)


def parse_steps(cot: str) -> list[Step]:
    """A chain of thought cut into sentences, each with its numbers; sentences a correction retracts marked."""
    steps: list[Step] = []
    for sentence in (s.strip() for s in _SENTENCE_RE.split(normalize(cot))):
        if not sentence:
            continue
        step = Step(sentence)
        spans: list[tuple[int, int]] = []
        for eq in check_arithmetic(sentence).equations:
            at = sentence.find(eq.text)
            if at < 0:
                continue
            spans.append((at, at + len(eq.text)))
            right_at = at + eq.text.rfind(eq.right)
            for q in quantities(sentence[at : at + len(eq.text)]):
                shifted = Quantity(q.values, q.text, q.start + at, q.decimals)
                if shifted.start < right_at and shifted not in step.operands:
                    step.operands.append(shifted)
            right = quantities(eq.right)
            step.operands.extend(right[1:])  # "5 * 4 = 20 + 3": the right side's other numbers are used too
            for value in (eq.right_value, eq.left_value):  # the stated result and the true one
                parsed = _fraction(value)
                if parsed is not None:
                    step.results.append(parsed)
            step.results.extend(right[0].values[:1] if right else ())
        step.mentions = [q for q in quantities(sentence) if not any(a <= q.start < b for a, b in spans)]
        if _CORRECTION_RE.match(sentence) and steps:
            steps[-1].retracted = True  # "Wait, that should be 12": the corrected value replaces the wrong one
        steps.append(step)
    return steps


def _fraction(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


@dataclass
class _Context:
    """What the candidate may use: known values, the unit factors in play, the question's own values."""

    known: set[Fraction]
    factors: tuple[Fraction, ...]
    question: set[Fraction]
    reference: set[Fraction]
    _forms: dict[tuple[Fraction, bool], tuple[Fraction, ...]] = field(default_factory=dict, repr=False)

    def close(self, value: Fraction, target: Fraction, decimals: int) -> bool:
        # A number shown with decimals may be a rounding ("33.33" for 100/3).
        return value == target or (decimals > 0 and abs(value - target) * 2 * 10**decimals <= 1)

    def forms(self, value: Fraction, convert: bool = True) -> tuple[Fraction, ...]:
        """The targets an exact ``value`` matches: itself and (``convert``) every non-trivial known value a unit
        factor in play turns into it (``value / f`` and ``value * f``)."""
        key = (value, convert)
        found = self._forms.get(key)
        if found is None:
            converted = [t for f in self.factors for t in (value / f, value * f)] if convert else []
            found = self._forms[key] = (value, *(t for t in converted if t not in TRIVIAL))
        return found

    def matches(self, q: Quantity, targets: Iterable[Fraction], *, convert: bool = True) -> bool:
        """``q`` is one of ``targets``, or one converted by a unit factor in play."""
        if not q.decimals:  # exact: look the value and its conversions up instead of scanning the targets
            lookup = targets if isinstance(targets, AbstractSet) else set(targets)
            return any(form in lookup for value in q.values for form in self.forms(value, convert))
        for target in targets:
            for value in q.values:
                if self.close(value, target, q.decimals):
                    return True
                if convert and target not in TRIVIAL and any(
                        self.close(value, target * f, q.decimals) or self.close(value, target / f, q.decimals)
                        for f in self.factors):
                    return True
        return False

    def derivation(self, q: Quantity, pool: AbstractSet[Fraction]) -> tuple[Fraction, Fraction] | None:
        """Two different known quantities of ``pool`` (0 and 1 left out) that give ``q`` in one ``+ - * /``
        step, if any."""
        if not q.decimals:  # exact: for each operand a, the b each operation needs (linear in the pool)
            for v in q.values:
                for a in pool:
                    partners = [v - a, a - v, a + v, v * a, *((v / a,) if a else ()), *((a / v,) if v else ())]
                    b = next((b for b in partners if b != a and b in pool), None)
                    if b is not None:
                        return a, b
            return None
        ordered = sorted(pool)
        for i, a in enumerate(ordered):  # a rounded number ("33.33"): compare with every result
            for b in ordered[i + 1 :]:
                combos = [a + b, a * b, a - b, b - a, *((a / b,) if b else ()), *((b / a,) if a else ())]
                if self.matches(q, combos, convert=False):
                    return a, b
        return None

    def has(self, value: Fraction, targets: Iterable[Fraction], *, convert: bool = True) -> bool:
        """:meth:`matches` for a bare value."""
        return self.matches(Quantity((value,), "", 0), targets, convert=convert)


def _unit_factors(*texts: str) -> tuple[Fraction, ...]:
    return tuple(f for f, pattern in _UNIT_RES.items() if any(pattern.search(t) for t in texts))


def _issue(category: str, span: str, quantity: Quantity | str | None, reason: str) -> dict[str, Any]:
    text = quantity.text if isinstance(quantity, Quantity) else quantity
    return {"category": category, "span": span, "quantity": text, "reason": reason}


def check_grounding(question: str, reference: str, candidate: str) -> list[dict[str, Any]]:
    """Every grounding issue of ``candidate`` (a response or a bare chain of thought), in text order.

    ``reference`` is a correct solution of ``question`` (a response or a chain; may be empty). Each issue is
    ``{"category", "span" (the sentence), "quantity" (the number as written, or None), "reason"}``.
    """
    asked = _Question.read(question)
    q_values = asked.values
    ref_cot, cand_cot = split_answer_and_cot(reference)[1], split_answer_and_cot(candidate)[1]
    ref_steps, steps = parse_steps(ref_cot), parse_steps(cand_cot)
    live = [s for s in steps if not s.retracted]
    ref_values = {v for s in ref_steps for v in s.values}
    factors = _unit_factors(question, ref_cot, cand_cot)
    ctx = _Context(q_values | ref_values | set(TRIVIAL) | set(factors), factors, q_values, ref_values)
    for step in live:
        ctx.known.update(step.results)
    _derive(ctx, live)
    answer = _answer(candidate, reference, ref_steps, live)
    facts = _question_facts(asked)
    counts = Counter(v for s in live for v in s.values)  # in how many live steps each value stands

    issues: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        if step.retracted:
            continue
        # A correction repeats the numbers it corrects ("should be 12, not 13"): they are not used.
        before = steps[index - 1] if index and steps[index - 1].retracted else None
        retracted = before.values if before else set()
        dead = _dead_end(ctx, step, counts, answer)
        found: list[dict[str, Any]] = []
        seen: set[Fraction] = set()
        for q in step.quantities:
            if q.values[0] in seen or set(q.values) & retracted or ctx.matches(q, ctx.known):
                continue
            seen.add(q.values[0])
            replaced = _replaced(ctx, facts, step, q)
            if replaced:  # a misstated question fact is wrong information, wherever it leads
                found.append(_issue(WRONG_INFORMATION, step.text, q, f"{q.text} replaces the question's {replaced}"))
            elif dead:
                found.append(_issue(IRRELEVANT_INFORMATION, step.text, q,
                                    f"{q.text} is neither in the question nor derived, and the step leads nowhere"))
            else:
                found.append(_issue(WRONG_INFORMATION, step.text, q,
                                    f"{q.text} is neither in the question nor derived from it"))
        found.extend(_contradictions(ctx, facts, step, seen))
        if dead and not found:  # a dead end that restates a question fact with another value misstates it
            found.extend(_contradictions(ctx, facts, step, seen, any_value=True) or _irrelevant_step(ctx, step))
        issues.extend(found)
    issues.extend(_dropped(ctx, asked, steps) if ref_steps else [])
    return issues


def _derive(ctx: _Context, live: list[Step]) -> None:
    """Prose derivations, to a fixed point: a derived number is known for every other step.

    The operands of a derivation are the question's values, the known values of the chain and the unit factors
    the chain writes out, but not the step's own results ("4 + 4 = 8" does not make 4 derivable as 8 / 2) nor
    values only the reference holds.
    """
    written = {f for s in live for q in s.quantities for f in ctx.factors if f == q.values[0]}
    results = Counter(r for s in live for r in set(s.results))  # in how many steps each result stands
    changed = True
    while changed:
        changed = False
        known_written = {q.values[0] for s in live for q in s.quantities if ctx.matches(q, ctx.known)}
        base = set(ctx.question) | written | known_written
        shared = (base | set(results)) - set(TRIVIAL)  # one pool per pass; each step then drops its own results
        for step in live:
            own = {r for r in step.results if results[r] == 1} - base  # results only this step has
            pool = shared - own if own else shared
            for q in step.quantities:
                if ctx.matches(q, ctx.known):
                    continue
                if ctx.derivation(q, pool):
                    ctx.known.add(q.values[0])
                    changed = True


def _answer(candidate: str, reference: str, ref_steps: list[Step], live: list[Step]) -> Fraction | None:
    """The final answer: the candidate's answer sentence, else the reference's, else the last result."""
    for response in (candidate, reference):
        stated = extract_answer_first(response, "number")
        found = quantities(normalize(stated)) if stated else []
        if found:
            return found[0].values[0]
    for steps in (ref_steps, live):
        if steps and steps[-1].results:
            return steps[-1].results[-1]
        if steps and steps[-1].quantities:
            return steps[-1].quantities[-1].values[0]
    return None


def _new_values(ctx: _Context, step: Step) -> set[Fraction]:
    values = {q.values[0] for q in step.quantities} | set(step.results)
    return values - ctx.question - set(TRIVIAL) - set(ctx.factors)


def _dead_end(ctx: _Context, step: Step, counts: Counter[Fraction], answer: Fraction | None) -> bool:
    """The step brings new values (not question numbers) and no other step uses them, nor is one the answer.

    ``counts``: in how many live steps each value stands (``step`` included), so another step uses a value
    when its count exceeds the step's own share.
    """
    new = _new_values(ctx, step)
    if not new:
        return _only_unused_question_numbers(ctx, step)
    if answer is not None and any(ctx.has(v, [answer]) for v in new):
        return False
    own = step.values
    return not any(counts[form] > (form in own) for v in new for form in ctx.forms(v))


def _only_unused_question_numbers(ctx: _Context, step: Step) -> bool:
    """A step that only restates question numbers the reference never uses ("She also has 4 cats.")."""
    values = {q.values[0] for q in step.quantities} - set(TRIVIAL)
    return bool(values and ctx.reference) and not any(
        ctx.has(v, ctx.reference, convert=False) for v in values)


def _irrelevant_step(ctx: _Context, step: Step) -> list[dict[str, Any]]:
    """A dead-end step with only known numbers: irrelevant when the reference never needs what it computes."""
    new = _new_values(ctx, step)
    if new and any(ctx.has(v, ctx.reference) for v in new):
        return []
    if not new:
        shown = step.quantities[0]
        return [_issue(IRRELEVANT_INFORMATION, step.text, shown,
                       f"the step restates the question's {shown.text}, which the solution does not need")]
    value = min(new)
    shown_text = next((q.text for q in step.quantities if q.values[0] == value), _show(value))
    return [_issue(IRRELEVANT_INFORMATION, step.text, shown_text,
                   f"the step arrives at {shown_text}, which no other step uses and the solution never needs")]


def _context_words(text: str, start: int, length: int) -> tuple[tuple[str, ...], str]:
    """The two words before a number and the (singular) word after it: "Tom has _ apples"."""
    before = tuple(_WORD_RE.findall(text[max(0, start - 40) : start].lower())[-2:])
    after = _WORD_RE.findall(text[start + length : start + length + 30].lower())[:1]
    return before, (after[0].rstrip("s") if after else "")


def _question_facts(asked: _Question) -> dict[tuple[tuple[str, ...], str], set[Fraction]]:
    """The question's numbers by context: (two words before, singular word after) -> values ("Tom has _ apple")."""
    facts: dict[tuple[tuple[str, ...], str], set[Fraction]] = {}
    for q in asked.quantities:
        before, after = _context_words(asked.text, q.start, len(q.text))
        if len(before) == 2 and after:
            facts.setdefault((before, after), set()).update(q.values)
    return facts


def _replaced(ctx: _Context, facts: dict[tuple[tuple[str, ...], str], set[Fraction]], step: Step, q: Quantity
              ) -> str | None:
    """The question's value that ``q`` (a mention) restates with another value, if its context is a fact's."""
    if q not in step.mentions:
        return None
    values = facts.get(_context_words(step.text, q.start, len(q.text)))
    if not values or ctx.matches(q, values):
        return None
    return ", ".join(_show(v) for v in sorted(values))


def _contradictions(ctx: _Context, facts: dict[tuple[tuple[str, ...], str], set[Fraction]], step: Step,
                    seen: set[Fraction], *, any_value: bool = False) -> list[dict[str, Any]]:
    """A question fact restated with another of the question's numbers, or (``any_value``) with any other
    value; ungrounded numbers are reported already."""
    out = []
    for q in step.mentions:
        replaced = _replaced(ctx, facts, step, q)
        if replaced and q.values[0] not in seen and (any_value or set(q.values) & ctx.question):
            out.append(_issue(WRONG_INFORMATION, step.text, q, f"{q.text} replaces the question's {replaced}"))
    return out


def _dropped(ctx: _Context, asked: _Question, steps: list[Step]) -> list[dict[str, Any]]:
    """Question numbers the reference uses and the candidate never writes, in any unit (retracted sentences
    included: a corrected step did use them)."""
    q_text = asked.text
    used = [q for s in steps for q in s.quantities]
    used += [Quantity((r,), "", 0) for r in {r for s in steps for r in s.results}]
    out, seen = [], set()
    for q in asked.quantities:
        if q.values[0] in TRIVIAL or q.values[0] in seen or not set(q.values) & ctx.reference:
            continue
        seen.add(q.values[0])
        if not any(ctx.matches(u, q.values) for u in used):
            sentence = next((s for s in _SENTENCE_RE.split(q_text) if q.text in s), q_text).strip()
            out.append(_issue(WRONG_INFORMATION, sentence, q, f"the question's {q.text} is never used"))
    return out


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


class GroundingJudge(DeterministicReasoningJudge):
    """The ``grounding`` reasoning judge (rules in the module docstring). ``label`` True = nothing ungrounded,
    False = an issue, None (abstains, "nothing to ground") when the candidate's chain states no quantity and no
    issue was found: there was nothing to check."""

    name = "grounding"
    version = 2  # 2: abstains when the chain has no quantity (1 called it correct)

    def verdict(self, item: ReasoningItem) -> Verdict:
        issues = check_grounding(item.question, item.reference, item.candidate)
        first = issues[0] if issues else {}
        raw = f"{len(issues)} grounding issue(s)" + "".join(
            f"; {i['category']}: {i['quantity']} in '{i['span']}'" for i in issues)
        detail = {"method": "grounding", **{k: first.get(k) for k in ("category", "span", "quantity", "reason")},
                  "issues": issues}
        if not issues and not _has_quantity(item.candidate):
            return Verdict.abstain(self.name, "0 quantities in the chain: abstains", NOTHING_TO_GROUND, detail)
        return Verdict(not issues, self.name, raw, detail)


NOTHING_TO_GROUND = "nothing to ground"


def _has_quantity(candidate: str) -> bool:
    """Whether the candidate's chain of thought (its answer sentence set aside) states any number."""
    return any(step.quantities or step.results for step in parse_steps(split_answer_and_cot(candidate)[1]))


_grounding_judge = register_judge(
    "grounding", summary="deterministic: the reasoning is wrong when it uses a quantity the question does not "
    "give, drops one it needs, or spends steps on unrelated quantities")(reasoning_only(GroundingJudge))
