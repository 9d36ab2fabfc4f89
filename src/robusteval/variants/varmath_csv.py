"""Import VAR-MATH template CSVs (github.com/nigelyaoj/VAR-MATH) into the native template format.

Column semantics are described in ``shared/data/var-math/README.md``. The CSV expressions are Python source
meant for ``eval``; here they are *parsed* (never run) and rewritten into the native expression language:
``math.comb`` -> ``comb``, ``np.log`` -> ``log``, ``x.real`` -> ``re(x)``, ``q.numerator`` -> ``numerator(q)``,
``list([...])`` -> ``[...]`` and ``sum([body for i in range(a, b)])`` -> ``sum_range(i, a, b, body)``. Anything
else that the native checker refuses makes that template a reported problem; the other rows still import.
"""

from __future__ import annotations

import ast
import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robusteval.errors import DataError
from robusteval.variants.expr import CONSTANTS, FUNCTIONS, SUM_RANGE
from robusteval.variants.template_error import TemplateError

REQUIRED_COLUMNS = (
    "id",
    "ori_answer",
    "ori_question",
    "VAR_question",
    "VAR_info",
    "VAR_round",
    "VAR_answer",
    "VAR_answer_round",
    "done",
)
_MODULES = {"math", "np", "numpy", "cmath"}
_ATTR_FUNCS = {"real": "re", "imag": "im", "numerator": "numerator", "denominator": "denominator"}
_ORI_VAR_RE = re.compile(r"(VAR_[A-Za-z0-9]+)\s*=\s*(Number|Str|Expression)_")
_KINDS = ("Random_linespace_", "Random_Set_", "Fixed_Set_", "Expression_")


@dataclass
class ImportResult:
    templates: list[dict[str, Any]] = field(default_factory=list)
    problems: list[TemplateError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Untranslatable(ValueError):
    pass


class _Rewrite(ast.NodeTransformer):
    """Rewrite the Python constructs the CSVs use into native-language equivalents."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in _MODULES:
            if node.attr in FUNCTIONS or node.attr in CONSTANTS:
                return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)
            raise _Untranslatable(f"{node.value.id}.{node.attr} has no native equivalent")
        if node.attr in _ATTR_FUNCS:
            inner = self.visit(node.value)
            call = ast.Call(
                func=ast.Name(id=_ATTR_FUNCS[node.attr], ctx=ast.Load()), args=[inner], keywords=[]
            )
            return ast.copy_location(call, node)
        raise _Untranslatable(f"attribute '.{node.attr}' has no native equivalent")

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "list" and len(node.args) == 1 and not node.keywords:
            arg = node.args[0]
            if isinstance(arg, ast.List | ast.Tuple):
                return self.visit(ast.List(elts=list(arg.elts), ctx=ast.Load()))
        if (
            isinstance(func, ast.Name)
            and func.id == "sum"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.ListComp | ast.GeneratorExp)
        ):
            return self._sum_range(node.args[0], node)
        return self.generic_visit(node)

    def _sum_range(self, comp: ast.ListComp | ast.GeneratorExp, node: ast.Call) -> ast.AST:
        if len(comp.generators) != 1:
            raise _Untranslatable("only single-loop sums can be translated")
        gen = comp.generators[0]
        it = gen.iter
        if (
            gen.ifs
            or gen.is_async
            or not isinstance(gen.target, ast.Name)
            or not isinstance(it, ast.Call)
            or not isinstance(it.func, ast.Name)
            or it.func.id != "range"
            or not 1 <= len(it.args) <= 2
        ):
            raise _Untranslatable("only sum(body for i in range(start, stop)) can be translated")
        start, stop = (ast.Constant(0), it.args[0]) if len(it.args) == 1 else (it.args[0], it.args[1])
        call = ast.Call(
            func=ast.Name(id=SUM_RANGE, ctx=ast.Load()),
            args=[
                ast.Name(id=gen.target.id, ctx=ast.Load()),
                self.visit(start),
                self.visit(stop),
                self.visit(comp.elt),
            ],
            keywords=[],
        )
        return ast.copy_location(call, node)


def translate_expression(text: str) -> str:
    """CSV Python expression -> native expression text (parsed, rewritten, unparsed; never executed)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise _Untranslatable(f"not a valid expression ({exc.msg})") from None
    return ast.unparse(_Rewrite().visit(tree))


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def csv_value(item: str, keep_text: bool) -> int | float | str:
    """A CSV set element: a number when it reads back identically, else the text.

    ``keep_text`` (VAR_round = -1: values are shown as written) keeps surrounding spaces, which the original
    generator prints; otherwise values are cast anyway and spaces do not matter.
    """
    text = item if keep_text else item.strip()
    number = _number(text)
    if number is not None and str(number) == text:
        return number
    return text


def _braced(spec: str, kind: str) -> list[str]:
    body = spec[len(kind) :]
    # The original generator drops exactly the first and last character (the braces), then splits on ','.
    return body[1:-1].split(",")


def _round(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    value = int(float(text))
    return None if value < 0 else value


def _parse_ori_var(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    matches = list(_ORI_VAR_RE.finditer(text or ""))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        raw = text[match.end() : end].strip().rstrip(",").strip()
        name, kind = match.group(1), match.group(2)
        if kind == "Number":
            number = _number(raw)
            out[name] = number if number is not None else raw
        elif kind == "Str":
            out[name] = raw
    return out


def _is_templated(done: str) -> bool:
    try:
        return float(done.strip()) == 1.0
    except ValueError:
        return False


def import_rows(rows: list[dict[str, str]], source: str) -> ImportResult:
    result = ImportResult()
    for row in rows:
        tid = (row.get("id") or "").strip()
        try:
            if not tid:
                raise TemplateError(None, "id", "empty id", source)
            result.templates.append(_import_row(row, tid, source, result.warnings))
        except TemplateError as exc:
            result.problems.append(exc)
    return result


def _import_row(row: dict[str, str], tid: str, source: str, warnings: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"var_math": {"done": row.get("done", "")}}
    url = (row.get("url") or "").strip()
    ori_answer_text = (row.get("ori_answer") or "").strip()
    ori_answer = _number(ori_answer_text)
    if not _is_templated(row.get("done") or ""):
        # Not templated: the original problem is kept as one instance with its original id.
        if ori_answer is None:
            raise TemplateError(
                tid, "ori_answer", f"original answer {ori_answer_text!r} is not a number", source
            )
        out: dict[str, Any] = {
            "id": tid,
            "question": row["ori_question"],
            "answer": ori_answer,
            "original_answer": ori_answer,
        }
        if url:
            out["url"] = url
        out["meta"] = meta
        return out

    round_ = _round(row.get("VAR_round") or "")
    variables: dict[str, Any] = {}
    for lineno, line in enumerate((row.get("VAR_info") or "").split("\n")):
        line = line.strip()
        if not line:
            continue
        name, eq, spec = line.partition("=")
        name, spec = name.strip(), spec.strip()
        field_name = f"variables.{name or lineno}"
        if not eq or not name:
            raise TemplateError(tid, "VAR_info", f"line {lineno + 1} is not NAME=Kind_spec: {line!r}", source)
        if name in variables:
            previous = variables.pop(name)
            if "range" in previous or "set" in previous:
                # A shuffled variable drew from the random stream: keep it (unused) so the stream stays aligned.
                variables[f"{name}_shadowed"] = previous
            warnings.append(
                f"{source}: template '{tid}': variable {name} is defined twice; the later definition is used"
            )
        if spec.startswith("Random_linespace_"):
            parts = [p.strip() for p in spec[len("Random_linespace_") :].strip().strip("[]").split(",")]
            numbers = [_number(p) for p in parts]
            if len(parts) != 3 or any(n is None for n in numbers):
                raise TemplateError(
                    tid, field_name, f"expected Random_linespace_[start,stop,step], got {spec!r}", source
                )
            variables[name] = {"range": numbers}
        elif spec.startswith("Random_Set_"):
            variables[name] = {"set": [csv_value(x, round_ is None) for x in _braced(spec, "Random_Set_")]}
        elif spec.startswith("Fixed_Set_"):
            variables[name] = {"values": [csv_value(x, round_ is None) for x in _braced(spec, "Fixed_Set_")]}
        elif spec.startswith("Expression_"):
            try:
                variables[name] = {"expr": translate_expression(spec[len("Expression_") :])}
            except _Untranslatable as exc:
                raise TemplateError(tid, f"{field_name}.expr", str(exc), source) from None
        else:
            raise TemplateError(
                tid, field_name, f"unknown kind in {spec!r}; expected one of {', '.join(_KINDS)}", source
            )
    if not variables:
        raise TemplateError(tid, "VAR_info", "templated row (done=1) without variables", source)

    # Aligned lists are cut to the shortest (the original generator pairs them by position).
    answer_text = (row.get("VAR_answer") or "").strip()
    answer: Any
    if answer_text.startswith("Fixed_Set_"):
        answer = {"values": [csv_value(x, False) for x in _braced(answer_text, "Fixed_Set_")]}
    elif answer_text.startswith("Expression_"):
        try:
            answer = translate_expression(answer_text[len("Expression_") :])
        except _Untranslatable as exc:
            raise TemplateError(tid, "answer", str(exc), source) from None
    else:
        raise TemplateError(
            tid,
            "answer",
            f"VAR_answer must start with Expression_ or Fixed_Set_, got {answer_text[:40]!r}",
            source,
        )
    aligned = [len(v["values"]) for v in variables.values() if "values" in v]
    if isinstance(answer, dict):
        aligned.append(len(answer["values"]))
    if aligned and len(set(aligned)) > 1:
        shortest = min(aligned)
        for v in variables.values():
            if "values" in v:
                v["values"] = v["values"][:shortest]
        if isinstance(answer, dict):
            answer["values"] = answer["values"][:shortest]
        warnings.append(f"{source}: template '{tid}': aligned lists of different lengths cut to {shortest}")

    question = _placeholders(row["VAR_question"], list(variables))
    out = {
        "id": tid,
        "question": question,
        "variables": variables,
        "round": round_,
        "answer": answer,
        "answer_round": _round(row.get("VAR_answer_round") or ""),
    }
    original = {
        k: v
        for k, v in _parse_ori_var(row.get("ori_var") or "").items()
        if k in variables and "expr" not in variables[k]
    }
    if original:
        out["original"] = original
    if ori_answer is not None:
        out["original_answer"] = ori_answer
    if url:
        out["url"] = url
    meta["var_math"]["ori_var"] = row.get("ori_var") or ""
    out["meta"] = meta
    return out


def _placeholders(question: str, names: list[str]) -> str:
    """``VAR_X`` -> ``{{VAR_X}}`` for defined names (longest first, so VAR_X never eats VAR_XY)."""
    if not names:
        return question
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
    return pattern.sub(lambda m: "{{" + m.group(0) + "}}", question)


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(
                    path, f"not a VAR-MATH template CSV: missing column(s) {', '.join(missing)}", line=1
                )
            return [dict(r) for r in reader]
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise DataError(path, f"invalid CSV: {exc}") from None


def import_csv(path: str | Path) -> ImportResult:
    """Read a VAR-MATH CSV and return native template mappings (plus per-row problems)."""
    p = Path(path)
    return import_rows(read_csv_rows(p), str(p))
