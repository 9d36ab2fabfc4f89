"""Behind ``variants check``: ``validate``'s check of the original answer, then the deep checks a template author
needs before sampling a benchmark from it.

Per template: it loads (a draft's unwritten answer included); its original values give its original answer
(:func:`robusteval.variants.checks.check_template`); its question has placeholders and every variable is used;
N seeded draws from its domains (every combination when there are at most N) satisfy its constraints often
enough; on the draws that do, every expression evaluates (no division by zero, finite, real), the answer is an
integer where the original answer is, keeps the original answer's sign, and one question text never has two
answers (a variable that changes the answer but is not shown); the instances ``instantiate`` would write are as
many as asked, distinct across templates, and differ from the original problem. Every finding is one line with
the file, the line of the field in it (YAML and JSON files) and the template id.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from robusteval.metrics.stats import proportion
from robusteval.seeding import derive_random
from robusteval.variants.checks import check_template, original_assignment
from robusteval.variants.expr import ExprError, constant_value
from robusteval.variants.sampler import (
    compute_native,
    compute_raw_answer,
    draw_assignments,
    render_question,
    sample_native,
    shown_values,
)
from robusteval.variants.template import PLACEHOLDER_RE, LoadResult, Template, TemplateError

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    template_id: str
    severity: Severity
    message: str
    field: str | None = None
    source: str | None = None
    line: int | None = None

    def text(self) -> str:
        """``file:line: error: template 'id', field 'answer': message``: one line, editors jump to it."""
        where = f"{self.source}:{self.line}: " if self.source and self.line else (
            f"{self.source}: " if self.source else "")
        what = f", field '{self.field}'" if self.field else ""
        return f"{where}{self.severity}: template '{self.template_id}'{what}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.template_id, "severity": self.severity, "field": self.field, "message": self.message,
                "source": self.source, "line": self.line}


@dataclass
class TemplateStats:
    """What the draws of one template gave (``satisfied``: k, n and the 95% interval of the rate)."""

    template_id: str
    combinations: int
    exhaustive: bool
    satisfied: dict[str, Any]
    instances: int


@dataclass
class CheckSettings:
    draws: int = 1000
    n: int = 5
    seed: int = 0
    min_rate: float = 0.05


@dataclass
class _Context:
    template: Template
    settings: CheckSettings
    lines: dict[str, int]
    findings: list[Finding] = field(default_factory=list)
    draws_failed: bool = False  # unsatisfiable or not evaluable: sampling instances would only repeat it

    def add(self, severity: Severity, message: str, field_name: str | None = None) -> None:
        t = self.template
        self.findings.append(
            Finding(t.id, severity, message, field_name, t.source, _line_of(self.lines, field_name))
        )


# ----------------------------------------------------------------------------------------------- lines
def line_index(path: str | Path) -> dict[str, dict[str, int]]:
    """For a YAML/JSON template file: template id (and ``#index``) -> field path -> 1-based line."""
    p = Path(path)
    if p.suffix.lower() not in (".yaml", ".yml", ".json"):
        return {}
    import yaml

    try:
        root = yaml.compose(p.read_text(encoding="utf-8-sig"), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return {}
    items = root
    if isinstance(root, yaml.MappingNode):
        items = next((v for k, v in root.value if getattr(k, "value", None) == "templates"), None)
    if not isinstance(items, yaml.SequenceNode):
        return {}
    index: dict[str, dict[str, int]] = {}
    for i, node in enumerate(items.value):
        lines = {"": node.start_mark.line + 1}
        if isinstance(node, yaml.MappingNode):
            _walk(node, "", lines)
            tid = next((v.value for k, v in node.value if k.value == "id" and isinstance(v, yaml.ScalarNode)),
                       None)
            if tid is not None:
                index.setdefault(str(tid), lines)
        index[f"#{i}"] = lines
    return index


def _walk(node: Any, prefix: str, lines: dict[str, int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = f"{prefix}.{key.value}" if prefix else str(key.value)
            lines[path] = key.start_mark.line + 1
            _walk(value, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[f"{prefix}[{i}]"] = item.start_mark.line + 1
            _walk(item, f"{prefix}[{i}]", lines)


def _line_of(lines: dict[str, int], field_name: str | None) -> int | None:
    path = field_name or ""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return lines.get("")


# ----------------------------------------------------------------------------------------------- checks
def check_one(template: Template, settings: CheckSettings, lines: dict[str, int] | None = None
              ) -> tuple[list[Finding], TemplateStats, list[str]]:
    """The findings of one loaded template, what its draws gave, and its instances' questions."""
    ctx = _Context(template, settings, lines or {})
    _original(ctx)
    _structure(ctx)
    stats = _draws(ctx)
    questions = _instances(ctx, stats)
    return ctx.findings, stats, questions


def _original(ctx: _Context) -> None:
    result = check_template(ctx.template)
    if result.status in ("mismatch", "error"):
        ctx.add("error", result.message, "answer" if result.status == "mismatch" else None)
    elif result.status == "unchecked":
        ctx.add("warning", f"the answer expression is not checked against the original ({result.message})",
                "original")


def _structure(ctx: _Context) -> None:
    t = ctx.template
    if not t.variables:
        ctx.add("warning", "no variables: the only instance is the original problem", "variables")
        return
    shown = {m.group(1) for m in PLACEHOLDER_RE.finditer(t.question)}
    if not shown:
        ctx.add("error", "the question has no {{placeholders}}: every instance is the original problem",
                "question")
    used = set(shown)
    for expr in [*t.constraints, t.answer, *(v.expr for v in t.dependent)]:
        if expr is not None:
            used |= expr.names
    for name in t.variables:
        if name not in used:
            ctx.add("warning", f"variable {name} is used nowhere (question, answer, constraints, expressions)",
                    f"variables.{name}")


def _integral(value: Any) -> bool:
    if isinstance(value, bool | int):
        return True
    if isinstance(value, Fraction):
        return value.denominator == 1
    if isinstance(value, float):
        return value.is_integer() or math.isclose(value, round(value), rel_tol=1e-9, abs_tol=1e-9)
    return False


def _number(value: Any) -> float | int | Fraction | None:
    """A real number, from a number or from text that stands for one ("36", "1/3"); else None."""
    if isinstance(value, str):
        try:
            value = constant_value(value)
        except ExprError:
            return None
    if isinstance(value, bool | int | float | Fraction):
        return value
    return None


def _draws(ctx: _Context) -> TemplateStats:
    t, s = ctx.template, ctx.settings
    rng = derive_random(s.seed, "variants-check", t.id)
    assignments, total, exhaustive = draw_assignments(t, s.draws, rng)
    failures: dict[str, list[Any]] = {}  # field -> [count, first message]
    accepted = non_integer = sign_flips = 0
    answers_by_question: dict[str, set[str]] = {}
    original = t.original_answer
    # answer_round >= 1 asks for decimals; 0 may hide a non-integer (a warning), none shows it (an error).
    original_number = _number(original)
    want_integer = original_number is not None and _integral(original_number) and t.answer_round in (None, 0)
    original_sign = original_number
    for base, row in assignments:
        try:
            values, answer, ok = compute_native(t, base, row)
            if ok:
                raw = compute_raw_answer(t, values, row)
                question = render_question(t, shown_values(t, values))
        except TemplateError as exc:
            entry = failures.setdefault(exc.field or "", [0, exc.reason])
            entry[0] += 1
            continue
        if not ok:
            continue
        accepted += 1
        if want_integer and not _integral(raw):
            non_integer += 1
        number = _number(answer)
        if original_sign and number is not None and number * original_sign <= 0:
            sign_flips += 1
        answers_by_question.setdefault(question, set()).add(
            f"{float(number):.12g}" if number is not None else str(answer))
    n = len(assignments)
    where = f"all {total} combinations" if exhaustive else f"{n} random draws"
    for field_name, (count, message) in failures.items():
        ctx.add("error", f"{message} - on {count} of {where}", field_name or None)
    ctx.draws_failed = bool(failures) or accepted == 0
    if accepted == 0 and not failures:
        scope = "none of " + where if exhaustive else f"none of {where} (from {total} combinations)"
        ctx.add("error", f"unsatisfiable: {scope} satisfy the constraints", "constraints")
    elif accepted and accepted < s.min_rate * n:
        ctx.add("warning", f"only {_rate(accepted, n)} of {where} satisfy the constraints: widen the domains or "
                "relax the constraints", "constraints")
    if non_integer:
        severity: Severity = "warning" if t.answer_round is not None else "error"
        fix = ("answer_round hides it; fine only if the question asks for rounding" if severity == "warning"
               else "add a constraint such as 'a % b == 0' or set answer_round")
        ctx.add(severity, f"the original answer is an integer but {_rate(non_integer, accepted)} of the valid "
                f"draws give a non-integer answer ({fix})", "answer")
    if sign_flips:
        sign = "positive" if original_sign and original_sign > 0 else "negative"
        ctx.add("warning", f"the original answer is {sign} but {_rate(sign_flips, accepted)} of the valid draws "
                "give an answer that is not: add a constraint", "answer")
    ambiguous = [(q, a) for q, a in answers_by_question.items() if len(a) > 1]
    if ambiguous:
        question, answers = ambiguous[0]
        shown = ", ".join(sorted(answers)[:3])
        ctx.add("error", f"{len(ambiguous)} question text(s) have several answers (e.g. {shown} for "
                f"{_clip(question)!r}): a variable changes the answer without being shown", "question")
    return TemplateStats(t.id, total, exhaustive, proportion(accepted, n), 0)


def _rate(k: int, n: int) -> str:
    """``12 of 1000 (1.2% [0.7, 2.1])``: the count, the denominator and the 95% Wilson interval."""
    p = proportion(k, n)
    lo, hi = p["ci95"] or (0.0, 0.0)
    return f"{k} of {n} ({100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}])"


def _clip(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _instances(ctx: _Context, stats: TemplateStats) -> list[str]:
    t, s = ctx.template, ctx.settings
    if ctx.draws_failed:
        return []
    try:
        result = sample_native(t, s.n, s.seed)
    except TemplateError as exc:
        ctx.add("error", exc.reason, exc.field)
        return []
    questions = [i.question for i in result.instances]
    stats.instances = len(questions)
    if len(questions) < s.n and t.variables:
        ctx.add("warning", f"only {len(questions)} distinct instance(s) exist, {s.n} asked: widen the domains",
                "variables")
    base, row, status, _ = original_assignment(t)
    if status == "ok" and t.variables:
        try:
            values, _, _ = compute_native(t, base, row)
            original_question = render_question(t, shown_values(t, values))
        except TemplateError:
            return questions
        same = [i.id for i in result.instances if i.question == original_question]
        if same:
            ctx.add("warning", f"instance {same[0]} is the original problem: set exclude_original: true",
                    "exclude_original")
    return questions


def check_loaded(
    loaded: Iterable[tuple[str, LoadResult]], settings: CheckSettings
) -> tuple[list[Finding], list[TemplateStats]]:
    """Every finding of every file (load problems first, in file order), and the draws of each template."""
    findings: list[Finding] = []
    stats: list[TemplateStats] = []
    owner: dict[str, str] = {}
    for path, result in loaded:
        index = line_index(path)
        for p in result.problems:
            tid = p.template_id or "?"
            lines = index.get(tid) or index.get(tid.split("/", 1)[-1]) or {}
            findings.append(Finding(tid, "error", p.reason, p.field, p.source or path, _line_of(lines, p.field)))
        for template in result.templates:
            lines = index.get(template.id) or index.get(template.id.split("/", 1)[-1]) or {}
            found, stat, questions = check_one(template, settings, lines)
            for question, count in Counter(questions).items():
                other = owner.setdefault(question, template.id)
                if other != template.id or count > 1:
                    who = "another instance of it" if other == template.id else f"template '{other}'"
                    found.append(Finding(template.id, "warning", f"instance {_clip(question)!r} duplicates {who}",
                                         "question", template.source, _line_of(lines, "question")))
            findings += found
            stats.append(stat)
    return findings, stats
