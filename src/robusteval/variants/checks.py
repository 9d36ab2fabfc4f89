"""Behind ``variants validate``: does each template, at its original values, give back the original answer?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from robusteval.variants.expr import ExprError
from robusteval.variants.sampler import Instance, compute_native, render_question, same_value, shown_values
from robusteval.variants.template import Template, TemplateError

Status = Literal["ok", "mismatch", "error", "unchecked"]


@dataclass
class Check:
    template_id: str
    status: Status
    message: str
    source: str | None = None
    computed: Any = None
    expected: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.template_id,
            "status": self.status,
            "message": self.message,
            "source": self.source,
            "computed": self.computed if not isinstance(self.computed, complex) else str(self.computed),
            "expected": self.expected,
        }


def _original_row(template: Template) -> tuple[int | None, Status, str | None]:
    """(the aligned row whose values are the original ones, status, why not): status ``ok`` when found (or when
    the template has no aligned lists), ``unchecked`` when no original value is given for them, ``mismatch``
    when the given ones are not among the rows."""
    rows = template.aligned_length()
    if rows is None:
        return None, "ok", None
    original = template.original or {}
    aligned = [v for v in template.independent if v.kind == "values"]
    given = [v for v in aligned if v.name in original]
    if not given:
        return None, "unchecked", "no original value for the aligned variables " + ", ".join(v.name for v in aligned)
    for j in range(rows):
        if all(same_value(v.items[j], original[v.name]) for v in given):
            return j, "ok", None
    shown = ", ".join(f"{v.name}={original[v.name]!r}" for v in given)
    return None, "mismatch", f"the original values ({shown}) are not among the aligned rows"


def original_assignment(template: Template) -> tuple[dict[str, Any], int | None, Status, str | None]:
    """(independent values, aligned row, status, why not) of the template's original problem. Status ``ok``:
    found (``why`` is None); ``unchecked``: original values are missing; ``mismatch``: they were given but are
    not among the aligned rows."""
    original = template.original or {}
    base: dict[str, Any] = {}
    for var in template.independent:
        if var.kind == "values":
            continue
        if var.name not in original:
            return base, None, "unchecked", f"no original value for {var.name}"
        base[var.name] = original[var.name]
    row, status, why = _original_row(template)
    if status != "ok":
        return base, None, status, why
    if row is not None:
        for var in template.independent:
            if var.kind == "values":
                base[var.name] = var.items[row]
    return base, row, "ok", None


def original_instance(template: Template) -> Instance | None:
    """The template's own problem (its original values) as an instance whose id is the template's, so VAR-MATH
    scores can be compared with the original accuracy; None unless the template checks ok
    (:func:`check_template`: its original values are given, meet its constraints and give its original answer)."""
    if check_template(template).status != "ok":
        return None
    base, row, _, _ = original_assignment(template)
    values, answer, _ = compute_native(template, base, row)
    shown = shown_values(template, values)
    return Instance(template.id, render_question(template, shown), answer, template.id, shown)


def check_template(template: Template) -> Check:
    def result(status: Status, message: str, **kw: Any) -> Check:
        return Check(template.id, status, message, template.source, **kw)

    if template.original_answer is None:
        return result("unchecked", "no original_answer to compare with")
    base, row, status, why = original_assignment(template)
    if status != "ok":
        # A mismatch when originals were given but are not in the lists; unchecked when none were given.
        return result(status, str(why), expected=template.original_answer)
    try:
        _, answer, ok = compute_native(template, base, row)
    except TemplateError as exc:
        return result("error", str(exc.reason if exc.field is None else f"{exc.field}: {exc.reason}"))
    except ExprError as exc:  # pragma: no cover - compute_native wraps these
        return result("error", str(exc))
    if not ok:
        return result(
            "mismatch",
            "the original values break the template's constraints",
            expected=template.original_answer,
        )
    if same_value(answer, template.original_answer) or _close(answer, template.original_answer):
        return result(
            "ok", "reproduces the original answer", computed=answer, expected=template.original_answer
        )
    return result(
        "mismatch",
        f"original values give {answer!r}, the original answer is {template.original_answer!r}",
        computed=answer,
        expected=template.original_answer,
    )


def _close(a: Any, b: Any) -> bool:
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError, OverflowError):
        return False
    return abs(fa - fb) <= 1e-6 * max(1.0, abs(fb))


def validate_templates(templates: list[Template], problems: list[TemplateError]) -> list[Check]:
    """One check per template, plus one ``error`` per template that did not load."""
    checks = [
        Check(
            p.template_id or "?", "error", p.reason if p.field is None else f"{p.field}: {p.reason}", p.source
        )
        for p in problems
    ]
    checks += [check_template(t) for t in templates]
    return checks
