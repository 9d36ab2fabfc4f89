"""The native template format (YAML or JSON), its checks, and loading of template files.

A file holds ``{"version": 1, "templates": [...]}`` or a bare list of templates. See ``docs/variants.md`` and
``template.schema.json`` for the format; :func:`parse_template` is the authoritative check (the JSON Schema is
documentation and editor support, not a runtime dependency). Every problem is reported with the template id
and the field, and a bad template never stops the other templates of a file from loading.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from robusteval.errors import DataError, UserError
from robusteval.variants.expr import RESERVED, Expr, ExprError, parse_expr
from robusteval.variants.template_error import TemplateError

FORMAT_VERSION = 1
VariableKind = Literal["range", "set", "values", "expr"]
NAMED_FORMATS = ("auto", "str", "frac", "latex")
MAX_DOMAIN = 100_000  # values in one range: bigger domains are a typo, not a benchmark
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: The answer ``variants draft`` leaves for the author; refused by name so a draft is never used unfinished.
DRAFT_ANSWER = "TODO"

_TEMPLATE_KEYS = {
    "id",
    "question",
    "variables",
    "constraints",
    "answer",
    "answer_round",
    "round",
    "format",
    "original",
    "original_answer",
    "exclude_original",
    "source",
    "url",
    "meta",
}
_VARIABLE_KEYS = {"range", "set", "values", "expr", "round", "format"}


@dataclass
class Variable:
    name: str
    kind: VariableKind
    items: list[Any] = field(default_factory=list)  # range (materialised), set or values
    range_spec: tuple[Any, Any, Any] | None = None  # (start, stop, step) as written, stop excluded
    expr: Expr | None = None
    round: int | None = None
    round_set: bool = False  # True when the variable sets its own ``round`` (null included)
    format: str | None = None


@dataclass
class Template:
    id: str
    question: str
    variables: dict[str, Variable]
    constraints: list[Expr] = field(default_factory=list)
    answer: Expr | None = None
    answer_values: list[Any] | None = None
    answer_round: int | None = None
    round: int | None = None
    format: str = "auto"
    original: dict[str, Any] | None = None
    original_answer: Any = None
    exclude_original: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # the file it came from
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def error(self, field_name: str | None, message: str) -> TemplateError:
        return TemplateError(self.id, field_name, message, self.source)

    @property
    def independent(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.kind != "expr"]

    @property
    def dependent(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.kind == "expr"]

    def round_of(self, var: Variable) -> int | None:
        return var.round if var.round_set else self.round

    def format_of(self, var: Variable) -> str:
        return var.format or self.format

    def aligned_length(self) -> int | None:
        """Rows of the aligned ``values`` lists (and an aligned answer); None when there are none."""
        lengths = [len(v.items) for v in self.variables.values() if v.kind == "values"]
        if self.answer_values is not None:
            lengths.append(len(self.answer_values))
        return min(lengths) if lengths else None


@dataclass
class LoadResult:
    templates: list[Template] = field(default_factory=list)
    problems: list[TemplateError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- checks
def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _check_round(value: Any, tid: str, fname: str, source: str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 15:
        raise TemplateError(tid, fname, f"must be an integer 0..15 (decimals) or null, got {value!r}", source)
    return value


def check_format(value: Any, tid: str, fname: str, source: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TemplateError(
            tid, fname, f"must be one of {', '.join(NAMED_FORMATS)} or a format spec like '.2f'", source
        )
    if value in NAMED_FORMATS:
        return value
    if "{" in value or "}" in value:
        raise TemplateError(
            tid, fname, f"format spec {value!r} must be a bare spec such as '.2f', not a template", source
        )
    ok = False
    for sample in (1.5, 3):
        try:
            format(sample, value)
            ok = True
        except (ValueError, TypeError):
            pass
    if not ok:
        raise TemplateError(tid, fname, f"{value!r} is not a valid format spec", source)
    return value


def _check_scalar_list(value: Any, tid: str, fname: str, source: str | None) -> list[Any]:
    if not isinstance(value, list):
        raise TemplateError(tid, fname, f"must be a list, got {type(value).__name__}", source)
    if not value:
        raise TemplateError(tid, fname, "empty domain (the list has no values)", source)
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float | str):
            raise TemplateError(tid, f"{fname}[{i}]", f"must be a number or text, got {item!r}", source)
        if isinstance(item, float) and not math.isfinite(item):
            raise TemplateError(tid, f"{fname}[{i}]", f"non-finite value {item!r}", source)
    return list(value)


def range_values(start: Any, stop: Any, step: Any) -> list[int | float]:
    """Values start, start+step, … below ``stop`` (stop excluded), computed exactly from the decimals written."""
    s, e, d = (Fraction(str(x)) for x in (start, stop, step))
    count = max(0, math.ceil((e - s) / d))
    if count > MAX_DOMAIN:
        raise ValueError(f"range has {count} values (limit {MAX_DOMAIN})")
    integral = all(isinstance(x, int) for x in (start, stop, step))
    out: list[int | float] = []
    for k in range(count):
        v = s + k * d
        out.append(int(v) if integral else float(v))
    return out


def _parse_variable(name: str, spec: Any, tid: str, source: str | None) -> Variable:
    fname = f"variables.{name}"
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise TemplateError(
            tid,
            "variables",
            f"variable name {name!r} must be letters/digits/_ starting with a letter",
            source,
        )
    if name in RESERVED:
        raise TemplateError(
            tid, fname, f"{name!r} is a function or constant name; pick another variable name", source
        )
    if isinstance(spec, str | int | float) and not isinstance(spec, bool):
        spec = {"expr": spec}  # shorthand: `c: "a + b"` is a dependent variable
    if not isinstance(spec, Mapping):
        raise TemplateError(tid, fname, "must be a mapping with one of range/set/values/expr", source)
    unknown = sorted(set(spec) - _VARIABLE_KEYS)
    if unknown:
        raise TemplateError(
            tid, f"{fname}.{unknown[0]}", f"unknown key; allowed: {', '.join(sorted(_VARIABLE_KEYS))}", source
        )
    kinds = [k for k in ("range", "set", "values", "expr") if k in spec]
    if len(kinds) != 1:
        raise TemplateError(tid, fname, "needs exactly one of range, set, values, expr", source)
    kind: VariableKind = kinds[0]  # type: ignore[assignment]
    var = Variable(name=name, kind=kind)
    if "round" in spec:
        var.round = _check_round(spec["round"], tid, f"{fname}.round", source)
        var.round_set = True
    var.format = check_format(spec.get("format"), tid, f"{fname}.format", source)
    body = spec[kind]
    if kind == "range":
        if not isinstance(body, list) or len(body) not in (2, 3) or not all(_is_number(x) for x in body):
            raise TemplateError(
                tid,
                f"{fname}.range",
                "must be [start, stop] or [start, stop, step] numbers (stop excluded)",
                source,
            )
        start, stop = body[0], body[1]
        step = body[2] if len(body) == 3 else 1
        if step <= 0:
            raise TemplateError(tid, f"{fname}.range", f"step must be positive, got {step!r}", source)
        try:
            var.items = range_values(start, stop, step)
        except ValueError as exc:
            raise TemplateError(tid, f"{fname}.range", str(exc), source) from None
        if not var.items:
            raise TemplateError(
                tid, f"{fname}.range", f"empty domain: no value from {start} up to (excluding) {stop}", source
            )
        var.range_spec = (start, stop, step)
    elif kind in ("set", "values"):
        var.items = _check_scalar_list(body, tid, f"{fname}.{kind}", source)
    return var


def parse_template(data: Any, source: str | None = None, index: int | None = None) -> Template:
    """Check one template mapping and build a :class:`Template`; raises :class:`TemplateError`."""
    fallback_id = f"#{index}" if index is not None else None
    if not isinstance(data, Mapping):
        raise TemplateError(fallback_id, None, f"must be a mapping, got {type(data).__name__}", source)
    raw_id = data.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or str(raw_id).strip() == "":
        raise TemplateError(fallback_id, "id", "missing or empty (text or integer required)", source)
    tid = str(raw_id)
    unknown = sorted(set(data) - _TEMPLATE_KEYS)
    if unknown:
        raise TemplateError(
            tid, unknown[0], f"unknown key; allowed: {', '.join(sorted(_TEMPLATE_KEYS))}", source
        )
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise TemplateError(tid, "question", "missing or empty", source)

    raw_vars = data.get("variables") or {}
    if not isinstance(raw_vars, Mapping):
        raise TemplateError(tid, "variables", "must be a mapping of name -> definition", source)
    variables: dict[str, Variable] = {}
    for name, spec in raw_vars.items():
        variables[str(name)] = _parse_variable(name, spec, tid, source)

    template = Template(id=tid, question=question, variables=variables, source=source, raw=dict(data))
    template.round = _check_round(data.get("round"), tid, "round", source)
    template.answer_round = _check_round(data.get("answer_round"), tid, "answer_round", source)
    template.format = check_format(data.get("format"), tid, "format", source) or "auto"
    exclude = data.get("exclude_original", False)
    if not isinstance(exclude, bool):
        raise TemplateError(tid, "exclude_original", "must be true or false", source)
    template.exclude_original = exclude
    meta = data.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise TemplateError(tid, "meta", "must be a mapping", source)
    template.meta = dict(meta)
    for key in ("source", "url"):
        if key in data and data[key] is not None:
            template.meta[key] = data[key]

    # Expressions: dependent variables may read every independent variable and earlier dependent ones.
    independent = {n for n, v in variables.items() if v.kind != "expr"}
    visible = set(independent)
    for name, var in variables.items():
        if var.kind == "expr":
            var.expr = _expr(
                raw_vars[name]["expr"] if isinstance(raw_vars[name], Mapping) else raw_vars[name],
                visible,
                tid,
                f"variables.{name}.expr",
                source,
            )
            visible.add(name)
    all_names = frozenset(variables)

    raw_constraints = data.get("constraints") or []
    if not isinstance(raw_constraints, list):
        raise TemplateError(tid, "constraints", "must be a list of expressions", source)
    template.constraints = [
        _expr(c, all_names, tid, f"constraints[{i}]", source) for i, c in enumerate(raw_constraints)
    ]

    if "answer" not in data or data["answer"] is None:
        raise TemplateError(tid, "answer", "missing", source)
    answer = data["answer"]
    if isinstance(answer, str) and answer.strip() == DRAFT_ANSWER:
        raise TemplateError(
            tid, "answer", f"still the draft placeholder {DRAFT_ANSWER}: write the answer as an expression of the "
            "variables (original_answer holds the original problem's answer)", source
        )
    if isinstance(answer, Mapping):
        if set(answer) != {"values"}:
            raise TemplateError(
                tid, "answer", "a mapping answer must be {values: [...]} (aligned answers)", source
            )
        template.answer_values = _check_scalar_list(answer["values"], tid, "answer.values", source)
    else:
        template.answer = _expr(answer, all_names, tid, "answer", source)

    lengths = {v.name: len(v.items) for v in variables.values() if v.kind == "values"}
    if template.answer_values is not None:
        lengths["answer"] = len(template.answer_values)
        if not any(v.kind == "values" for v in variables.values()) and variables:
            raise TemplateError(
                tid, "answer.values", "aligned answers need aligned 'values' variables", source
            )
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise TemplateError(tid, "variables", f"aligned 'values' lists differ in length ({detail})", source)

    for match in PLACEHOLDER_RE.finditer(question):
        if match.group(1) not in variables:
            raise TemplateError(
                tid, "question", f"placeholder {{{{{match.group(1)}}}}} names an undefined variable", source
            )

    original = data.get("original")
    if original is not None:
        if not isinstance(original, Mapping):
            raise TemplateError(tid, "original", "must be a mapping of variable -> original value", source)
        for name, value in original.items():
            if name not in variables:
                raise TemplateError(tid, f"original.{name}", "not a variable of this template", source)
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise TemplateError(
                    tid, f"original.{name}", f"must be a number or text, got {value!r}", source
                )
        template.original = dict(original)
    template.original_answer = data.get("original_answer")
    if template.exclude_original and not template.original:
        raise TemplateError(tid, "exclude_original", "needs 'original' values to exclude", source)
    return template


def _expr(text: Any, names: Iterable[str], tid: str, fname: str, source: str | None) -> Expr:
    try:
        return parse_expr(text, names=frozenset(names))
    except ExprError as exc:
        raise TemplateError(tid, fname, str(exc), source) from None


# ---------------------------------------------------------------------------------------------------- files
def read_template_data(path: Path) -> Any:
    """The parsed content of a native template file (YAML or JSON)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise DataError(path, f"invalid YAML: {problem}", line=line) from None


def templates_from_data(data: Any, source: str) -> LoadResult:
    """Check every template of a parsed file; bad ones go to ``problems``, the rest load."""
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"version", "templates"})
        if unknown:
            raise DataError(
                source, f"unknown top-level key '{unknown[0]}' (expected 'version' and 'templates')"
            )
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise DataError(
                source,
                f"unsupported template format version {version!r} (this robusteval reads {FORMAT_VERSION})",
            )
        items = data.get("templates")
    else:
        items = data
    if not isinstance(items, list):
        raise DataError(source, "expected a list of templates (or a mapping with a 'templates' list)")
    result = LoadResult()
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        try:
            template = parse_template(item, source=source, index=index)
        except TemplateError as exc:
            result.problems.append(exc)
            continue
        if template.id in seen:
            result.problems.append(
                TemplateError(template.id, "id", f"duplicate id (also template #{seen[template.id]})", source)
            )
            continue
        seen[template.id] = index
        result.templates.append(template)
    return result


def load_template_file(path: str | Path) -> LoadResult:
    """Load native YAML/JSON templates, or import a VAR-MATH CSV (``.csv``)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"template file {p}: no such file")
    if p.suffix.lower() == ".csv":
        from robusteval.variants.varmath_csv import import_csv

        imported = import_csv(p)
        result = templates_from_data({"version": FORMAT_VERSION, "templates": imported.templates}, str(p))
        result.problems = imported.problems + result.problems
        result.warnings = imported.warnings + result.warnings
        return result
    if p.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise UserError(f"template file {p}: expected a .yaml, .yml, .json (native) or .csv (VAR-MATH) file")
    return templates_from_data(read_template_data(p), str(p))


def load_templates(paths: Iterable[str | Path], *, prefix_ids: bool = False) -> list[tuple[str, LoadResult]]:
    """Load several files in order; ids must be unique across them (instances are keyed by id).

    ``prefix_ids`` turns id ``3`` of ``aime25.csv`` into ``aime25/3`` (for files whose ids collide).
    """
    out: list[tuple[str, LoadResult]] = []
    seen: dict[str, str] = {}
    for path in paths:
        result = load_template_file(path)
        kept = []
        for template in result.templates:
            if prefix_ids:
                template.id = f"{Path(path).stem}/{template.id}"
            if template.id in seen:
                result.problems.append(template.error("id", f"duplicate id (also in {seen[template.id]})"))
                continue
            seen[template.id] = str(path)
            kept.append(template)
        result.templates = kept
        out.append((str(path), result))
    return out


def split_paths(text: str) -> list[str]:
    """``--templates a.csv,b.yaml`` -> ["a.csv", "b.yaml"]."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise UserError("templates: no file given")
    return parts
