"""Turn templates into concrete instances: the native seeded sampler and the VAR-MATH compatible generator.

Native mode: each template gets its own RNG seeded from ``(seed, template id)``, so adding or removing a
template never changes another template's instances. Small joint domains are enumerated in a seeded random
order, large ones are sampled with rejection; constraints, distinctness (by question text) and the optional
exclusion of the original values are enforced, and an unsatisfiable template is an error naming it.

Compat mode (``--compat var-math``) replays the original generator: one legacy numpy ``RandomState`` seeded
once and shared by all templates in file order, ``shuffle`` per Random variable in declaration order, the first
``n`` values of every list paired by position, expression variables rounded with ``np.round(x, 0)``, values
cast by ``round`` (0: ``int``; n: ``np.round(float, n)``; null: as written) and printed with ``str()``,
answers stored as ``float(np.round(answer, answer_round))``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from robusteval.seeding import derive_random
from robusteval.variants.expr import Expr, ExprError, constant_value
from robusteval.variants.template import PLACEHOLDER_RE, Template, TemplateError, Variable

ENUMERATE_LIMIT = 20_000  # joint domains up to this size are enumerated (exact unsatisfiability detection)
MIN_DRAWS = 2_000
DRAWS_PER_INSTANCE = 200


@dataclass
class Instance:
    id: str
    question: str
    answer: Any
    template: str
    values: dict[str, str] = field(default_factory=dict)

    def to_json(self, compat: bool = False) -> dict[str, Any]:
        if compat:
            return {"id": self.id, "question": self.question, "answer": self.answer}
        return {
            "id": self.id,
            "question": self.question,
            "answer": json_answer(self.answer),
            "template": self.template,
            "values": self.values,
        }


@dataclass
class SampleResult:
    instances: list[Instance]
    warnings: list[str] = field(default_factory=list)


def json_answer(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value) if value.denominator != 1 else int(value)
    return value


# ---------------------------------------------------------------------------------------------------- values
def _text_resolver(template: Template) -> Callable[[str, Any], Any]:
    cache: dict[tuple[str, str], Any] = {}

    def resolve(name: str, raw: Any) -> Any:
        key = (name, str(raw))
        if key not in cache:
            cache[key] = constant_value(raw, name)
        return cache[key]

    return resolve


def native_round(value: Any, ndigits: int | None, what: str = "value") -> Any:
    """Round half to even to ``ndigits`` decimals (0: an int); None leaves the value as it is."""
    if ndigits is None:
        return value
    if isinstance(value, str):
        value = constant_value(value, what)
    if isinstance(value, complex):
        if value.imag != 0:
            raise ExprError(f"cannot round the complex {what} {value!r}")
        value = value.real
    if isinstance(value, list):
        raise ExprError(f"{what} is a list, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"non-finite {what} {value!r}")
    if ndigits == 0:
        return round(value)  # int for float and Fraction alike
    return round(float(value), ndigits)


def format_value(value: Any, fmt: str) -> str:
    """How a value is printed in the question (see docs/variants.md, 'format')."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        value = int(value)
    if fmt == "str":
        return str(value)
    if (
        fmt in ("frac", "latex")
        and isinstance(value, float)
        and math.isfinite(value)
        and not value.is_integer()
    ):
        value = Fraction(f"{value:.12g}")  # the decimal meant (12 digits), not the binary float
    if isinstance(value, Fraction) and value.denominator == 1:
        value = int(value)
    if isinstance(value, Fraction):
        if fmt == "latex":
            sign = "-" if value < 0 else ""
            return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"
        if fmt in ("auto", "frac"):
            return f"{value.numerator}/{value.denominator}"
        value = float(value)
    if fmt in ("auto", "frac", "latex"):
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if value.is_integer() and abs(value) < 1e16:
                return str(int(value))
            text = f"{value:.12g}"  # hides float noise such as 1.9999999999999998
            return repr(value) if "e" in text or "inf" in text or "nan" in text else text
        return str(value)
    return format(float(value) if isinstance(value, Fraction) else value, fmt)


def render_question(template: Template, shown: dict[str, str]) -> str:
    return PLACEHOLDER_RE.sub(lambda m: shown[m.group(1)], template.question)


def finalize_answer(value: Any, ndigits: int | None) -> Any:
    """The stored gold answer: real, finite, rounded to ``answer_round`` decimals (0: an int)."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, str):
        try:
            value = constant_value(value, "answer")
        except ExprError:
            if ndigits is not None:
                raise
            return value.strip()  # a text answer (e.g. LaTeX) from an aligned list
    if isinstance(value, list):
        raise ExprError("answer is a list, not a number")
    if isinstance(value, complex):
        if value.imag != 0:
            raise ExprError(f"non-real answer {value!r}")
        value = value.real
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"non-finite answer {value!r}")
    if ndigits is None:
        if isinstance(value, Fraction) and value.denominator == 1:
            return int(value)
        return value
    return native_round(value, ndigits, "answer")


def _eval(template: Template, expr: Expr, env: dict[str, Any], field_name: str) -> Any:
    try:
        return expr.evaluate(env, _text_resolver(template))
    except ExprError as exc:
        where = ", ".join(f"{k}={v!r}" for k, v in env.items() if k in expr.names)
        raise template.error(field_name, f"{exc}" + (f" (at {where})" if where else "")) from None


def compute_native(
    template: Template, base: dict[str, Any], row: int | None
) -> tuple[dict[str, Any], Any, bool]:
    """Values of every variable, the answer, and whether the constraints hold, for one assignment."""
    values: dict[str, Any] = {}
    for var in template.independent:
        try:
            values[var.name] = native_round(base[var.name], template.round_of(var), var.name)
        except ExprError as exc:
            raise template.error(f"variables.{var.name}", str(exc)) from None
    independent = set(values)
    # Constraints on independent variables first: they may guard expressions (e.g. a != b before 1/(a-b)).
    early = [(i, c) for i, c in enumerate(template.constraints) if c.names <= independent]
    for i, constraint in early:
        if not _eval(template, constraint, values, f"constraints[{i}]"):
            return values, None, False
    for var in template.dependent:
        assert var.expr is not None
        raw = _eval(template, var.expr, values, f"variables.{var.name}.expr")
        try:
            values[var.name] = native_round(raw, template.round_of(var), var.name)
        except ExprError as exc:
            raise template.error(f"variables.{var.name}", str(exc)) from None
    for i, constraint in enumerate(template.constraints):
        if not constraint.names <= independent and not _eval(
            template, constraint, values, f"constraints[{i}]"
        ):
            return values, None, False
    raw_answer = compute_raw_answer(template, values, row)
    try:
        answer = finalize_answer(raw_answer, template.answer_round)
    except ExprError as exc:
        where = ", ".join(f"{k}={v!r}" for k, v in values.items())
        raise template.error("answer", f"{exc}" + (f" (at {where})" if where else "")) from None
    return values, answer, True


def compute_raw_answer(template: Template, values: dict[str, Any], row: int | None) -> Any:
    """The answer before ``answer_round`` (``variants check`` asks whether rounding changed it)."""
    if template.answer_values is not None:
        return template.answer_values[row if row is not None else 0]
    assert template.answer is not None
    return _eval(template, template.answer, values, "answer")


def shown_values(template: Template, values: dict[str, Any]) -> dict[str, str]:
    shown = {}
    for var in template.variables.values():
        try:
            shown[var.name] = format_value(values[var.name], template.format_of(var))
        except (ValueError, TypeError) as exc:
            raise template.error(
                f"variables.{var.name}.format", f"cannot format {values[var.name]!r}: {exc}"
            ) from None
    return shown


def same_value(a: Any, b: Any) -> bool:
    """Numbers compare numerically (18 == 18.0), text by its stripped form or the number it stands for."""
    if isinstance(a, str) or isinstance(b, str):
        if str(a).strip() == str(b).strip():
            return True
        try:
            a, b = constant_value(a), constant_value(b)
        except ExprError:
            return False
    try:
        return bool(a == b) or (
            isinstance(a, int | float | Fraction)
            and isinstance(b, int | float | Fraction)
            and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        )
    except (TypeError, OverflowError):
        return False


# ---------------------------------------------------------------------------------------------------- native
def _axes(template: Template) -> tuple[list[tuple[str | None, list[Any]]], int | None]:
    """Independent choices: one axis per range/set variable, one shared axis for the aligned rows."""
    axes: list[tuple[str | None, list[Any]]] = []
    rows = template.aligned_length()
    for var in template.independent:
        if var.kind in ("range", "set"):
            axes.append((var.name, var.items))
    if rows is not None:
        axes.append((None, list(range(rows))))
    return axes, rows


def _assignment(
    template: Template, axes: list[tuple[str | None, list[Any]]], choice: tuple[int, ...]
) -> tuple[dict[str, Any], int | None]:
    base: dict[str, Any] = {}
    row: int | None = None
    for (name, items), k in zip(axes, choice, strict=True):
        if name is None:
            row = items[k]
        else:
            base[name] = items[k]
    if row is not None:
        for var in template.independent:
            if var.kind == "values":
                base[var.name] = var.items[row]
    return base, row


def _is_original(template: Template, base: dict[str, Any]) -> bool:
    original = template.original or {}
    keys = [k for k in original if k in base]
    return bool(keys) and all(same_value(base[k], original[k]) for k in keys)


def _unflatten(index: int, sizes: list[int]) -> tuple[int, ...]:
    out = []
    for size in reversed(sizes):
        index, k = divmod(index, size)
        out.append(k)
    return tuple(reversed(out))


def draw_assignments(
    template: Template, draws: int, rng: random.Random
) -> tuple[list[tuple[dict[str, Any], int | None]], int, bool]:
    """(assignments, size of the joint domain, exhaustive): every combination when there are at most
    ``draws``, else ``draws`` uniform draws with replacement; assignments are (independent values, row)."""
    axes, _ = _axes(template)
    sizes = [len(items) for _, items in axes]
    total = math.prod(sizes)
    exhaustive = total <= draws
    flats = range(total) if exhaustive else [rng.randrange(total) for _ in range(draws)]
    return [_assignment(template, axes, _unflatten(f, sizes)) for f in flats], total, exhaustive


def sample_native(template: Template, n: int, seed: int, *, exclude_original: bool = False) -> SampleResult:
    """``n`` distinct instances of ``template`` (fewer, with a warning, when the domain has fewer)."""
    if n < 1:
        raise ValueError("n must be positive")
    exclude = exclude_original or template.exclude_original
    if exclude and not template.original:
        raise template.error("original", "exclusion of the original values was asked for but none are given")
    axes, _ = _axes(template)
    if not axes:
        values, answer, ok = compute_native(template, {}, None)
        if not ok:
            raise template.error(
                "constraints", "unsatisfiable: the constraints are false (the template has no variables)"
            )
        question = render_question(template, shown_values(template, values))
        return SampleResult([Instance(template.id, question, answer, template.id, {})])

    rng = derive_random(seed, "variants", template.id)
    sizes = [len(items) for _, items in axes]
    total = math.prod(sizes)
    enumerate_all = total <= ENUMERATE_LIMIT
    if enumerate_all:
        order: Any = rng.sample(range(total), total)
    else:
        draws = max(MIN_DRAWS, DRAWS_PER_INSTANCE * n)
        order = (rng.randrange(total) for _ in range(draws))

    instances: list[Instance] = []
    seen_questions: set[str] = set()
    seen_choices: set[int] = set()
    tried = rejected_constraint = rejected_original = duplicates = 0
    for flat in order:
        if len(instances) >= n:
            break
        if flat in seen_choices:
            continue
        seen_choices.add(flat)
        tried += 1
        base, row = _assignment(template, axes, _unflatten(flat, sizes))
        if exclude and _is_original(template, base):
            rejected_original += 1
            continue
        values, answer, ok = compute_native(template, base, row)
        if not ok:
            rejected_constraint += 1
            continue
        shown = shown_values(template, values)
        question = render_question(template, shown)
        if question in seen_questions:
            duplicates += 1
            continue
        seen_questions.add(question)
        instances.append(Instance(f"{template.id}_{len(instances)}", question, answer, template.id, shown))

    if not instances:
        how = (
            f"all {total} combinations"
            if enumerate_all
            else f"{tried} random draws from {total} combinations"
        )
        detail = []
        if rejected_constraint:
            detail.append(f"{rejected_constraint} broke the constraints")
        if rejected_original:
            detail.append(f"{rejected_original} were the original values")
        reason = "; ".join(detail) or "none were valid"
        raise template.error("constraints", f"unsatisfiable: no instance found in {how} ({reason})")
    warnings = []
    if len(instances) < n:
        scope = "the domain allows only" if enumerate_all else "found only"
        warnings.append(
            f"template '{template.id}': {scope} {len(instances)} distinct instance(s) of {n} asked"
        )
    return SampleResult(instances, warnings)


# ---------------------------------------------------------------------------------------------------- compat
def _py(value: Any) -> Any:
    """numpy scalars -> Python numbers (same value, same str())."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.complexfloating):
        return complex(value)
    return value


def _compat_cast(value: Any, ndigits: int | None, what: str) -> Any:
    """The original generator's VAR_round rule: 0 -> int(v), n -> np.round(float(v), n), -1 -> as is."""
    if ndigits is None:
        return value
    if ndigits == 0:
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                return int(float(constant_value(value, what)))
        if isinstance(value, complex):
            raise ExprError(f"int() of the complex {what} {value!r}")
        return int(value)
    number = float(constant_value(value, what)) if isinstance(value, str) else float(value)
    return _py(np.round(number, ndigits))


def _compat_round0(value: Any) -> Any:
    """``np.round(value, 0)`` as the original generator applies it to every expression variable."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Fraction):
        return round(value)
    return _py(np.round(value, 0))


def _compat_answer(value: Any, ndigits: int | None) -> float:
    if isinstance(value, str):
        value = constant_value(value, "answer")
    if isinstance(value, complex | list):
        raise ExprError(f"answer {value!r} is not a real number")
    if isinstance(value, Fraction):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"non-finite answer {value!r}")
    if ndigits is None or isinstance(value, int):
        return float(value)  # rounding an int to n >= 0 places leaves it unchanged
    return float(np.round(value, ndigits))


class CompatGenerator:
    """The VAR-MATH generator: one RNG stream shared by every template, in the order given."""

    def __init__(self, seed: int = 42):
        self.rng = np.random.RandomState(seed)  # legacy stream == np.random.seed(seed) + np.random.shuffle

    def sample(self, template: Template, n: int) -> SampleResult:
        if template.constraints:
            raise template.error(
                "constraints", "not supported with --compat var-math (the original format has none)"
            )
        if template.exclude_original:
            raise template.error("exclude_original", "not supported in var-math compat mode")
        if not template.variables:
            if template.answer_values is not None:
                raw = template.answer_values[0]
            else:
                assert template.answer is not None  # a template has an answer or answer values (checked on load)
                raw = _eval(template, template.answer, {}, "answer")
            answer = self._answer(template, raw)
            return SampleResult([Instance(template.id, template.question, answer, template.id, {})])

        lists: dict[str, list[Any]] = {}
        for var in template.variables.values():
            if var.kind == "range":
                assert var.range_spec is not None
                start, stop, step = var.range_spec
                arr = np.arange(int(start), int(stop), float(step))
                self.rng.shuffle(arr)
                lists[var.name] = [_py(x) for x in arr[:n]]
            elif var.kind == "set":
                items = list(var.items)
                self.rng.shuffle(items)
                lists[var.name] = items[:n]
            elif var.kind == "values":
                lists[var.name] = list(var.items[:n])
        if not lists:
            raise template.error(
                "variables", "var-math compat mode needs at least one range/set/values variable"
            )
        count = min(len(v) for v in lists.values())
        if template.answer_values is not None:
            count = min(count, len(template.answer_values))

        instances = []
        for j in range(count):
            values: dict[str, Any] = {}
            for name, items in lists.items():
                var = template.variables[name]
                values[name] = self._cast(template, var, items[j])
            for var in template.dependent:
                assert var.expr is not None
                raw = _eval(template, var.expr, values, f"variables.{var.name}.expr")
                values[var.name] = self._cast(template, var, _compat_round0(raw))
            shown = {name: str(value) for name, value in values.items()}
            question = render_question(template, shown)
            if template.answer_values is not None:
                raw_answer: Any = template.answer_values[j]
            else:
                assert template.answer is not None
                raw_answer = _eval(template, template.answer, values, "answer")
            instances.append(
                Instance(
                    f"{template.id}_{j}", question, self._answer(template, raw_answer), template.id, shown
                )
            )
        return SampleResult(instances)

    @staticmethod
    def _cast(template: Template, var: Variable, value: Any) -> Any:
        try:
            return _compat_cast(value, template.round_of(var), var.name)
        except (ExprError, ValueError, OverflowError) as exc:
            raise template.error(
                f"variables.{var.name}", f"cannot apply round={template.round_of(var)}: {exc}"
            ) from None

    @staticmethod
    def _answer(template: Template, raw: Any) -> float:
        try:
            return _compat_answer(raw, template.answer_round)
        except (ExprError, ValueError, OverflowError) as exc:
            raise template.error("answer", str(exc)) from None


def instantiate(
    templates: list[Template],
    n: int,
    seed: int,
    *,
    compat: str | None = None,
    exclude_original: bool = False,
    generator: CompatGenerator | None = None,
) -> tuple[list[Instance], list[TemplateError], list[str]]:
    """Instances of every template in order; a failing template is reported and skipped."""
    if compat not in (None, "var-math"):
        raise ValueError(f"unknown compat mode {compat!r}")
    if compat and generator is None:
        generator = CompatGenerator(seed)
    instances: list[Instance] = []
    problems: list[TemplateError] = []
    warnings: list[str] = []
    for template in templates:
        try:
            if generator is not None:
                result = generator.sample(template, n)
            else:
                result = sample_native(template, n, seed, exclude_original=exclude_original)
        except TemplateError as exc:
            problems.append(exc)
            continue
        instances.extend(result.instances)
        warnings.extend(result.warnings)
    return instances, problems, warnings
