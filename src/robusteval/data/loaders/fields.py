"""Checking one record's fields and turning them into :class:`Example` values.

Every problem becomes a one-line :class:`DataError` naming the file, the 1-based line (and for JSON arrays the
record index) and the field; gold answers of any JSON/CSV shape are normalised to the text form
:class:`Example` documents. Also the field mapping of the generic loaders (:data:`DEFAULT_FIELDS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

from robusteval.data.answers import parse_number
from robusteval.data.example import AnswerType, Example
from robusteval.errors import DataError, UserError

#: Our field names -> the file's field names, for the generic loaders (jsonl, csv, hf).
DEFAULT_FIELDS: dict[str, str] = {"id": "id", "question": "question", "answer": "answer"}

_ANSWER_TYPES: frozenset[str] = frozenset(get_args(AnswerType))


def _resolve_fields(fields: Mapping[str, str] | None) -> dict[str, str]:
    unknown = set(fields or {}) - set(DEFAULT_FIELDS)
    if unknown:
        raise UserError(
            f"unknown field name(s) {', '.join(sorted(unknown))} in the field mapping; "
            f"expected {', '.join(DEFAULT_FIELDS)}"
        )
    return {**DEFAULT_FIELDS, **(fields or {})}


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


@dataclass(frozen=True)
class _Loc:
    """Where a record sits: file, 1-based line and, for JSON arrays, the 0-based record index.

    The record index matters because a JSON array may be on one line (SingleEq is).
    """

    path: object
    line: int | None
    record: str | None = None  # "record 12" / "row 12"

    def describe(self) -> str:
        parts = [f"line {self.line}"] if self.line is not None else []
        return ", ".join([*parts, *([self.record] if self.record else [])])

    def error(self, message: str, field: str | None = None) -> DataError:
        if self.record:
            message = f"{message} ({self.record})"
        return DataError(self.path, message, line=self.line, field=field)


def _require(record: Mapping[str, Any], key: str, loc: _Loc) -> Any:
    if key not in record:
        raise loc.error("required field is missing", key)
    return record[key]


def _text(value: object, key: str, loc: _Loc) -> str:
    if not isinstance(value, str):
        raise loc.error(f"expected a string, got {_type_name(value)}", key)
    if not value.strip():
        raise loc.error("is empty", key)
    return value


def _ident(value: object, key: str, loc: _Loc) -> str:
    # Ids are often integers in the source (OCNLI, SingleEq); booleans and floats are almost surely mistakes.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, key, loc).strip()


def _format_number(value: float) -> str:
    """43.0 -> "43", 2.5 -> "2.5": integral floats lose the ".0" so they compare as written in questions."""
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _number(value: object, key: str, loc: _Loc) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise loc.error(f"expected a number, got {_type_name(value)}", key)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise loc.error(f"expected a finite number, got {value}", key)
    return _format_number(value)


_YES = frozenset({"yes", "true"})
_NO = frozenset({"no", "false"})


def _answer(value: object, key: str, answer_type: str, loc: _Loc) -> str:
    """Normalise a gold answer given in any JSON/CSV shape to the text form :class:`Example` documents."""
    if isinstance(value, bool):
        if answer_type != "yesno":
            raise loc.error(f"expected a string or number, got {_type_name(value)}", key)
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return _number(value, key, loc)
    text = _text(value, key, loc).strip()
    if answer_type == "number" and parse_number(text) is None:
        # A gold answer that is not a number can never be matched by a numeric grader.
        raise loc.error(f"expected a number, got {text[:60]!r} (use --answer-type text or math for other "
                        "answers)", key)
    if answer_type == "yesno":
        lowered = text.lower()
        if lowered in _YES:
            return "yes"
        if lowered in _NO:
            return "no"
        raise loc.error(f"expected yes or no, got {text!r}", key)
    return text


class _Ids:
    """Rejects duplicate ids, naming both places: silent duplicates would collide in the run store."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}

    def add(self, ident: str, loc: _Loc, field: str | None) -> None:
        first = self._first.get(ident)
        if first is not None:
            raise loc.error(f"duplicate id {ident!r} (first on {first})", field)
        self._first[ident] = loc.describe()


def _generic_example(
    record: Mapping[str, Any], *, fields: Mapping[str, str], answer_type: str, fallback_id: str, loc: _Loc
) -> Example:
    """One record of a user-described file; unmapped fields go to ``meta`` untouched."""
    id_key, q_key, a_key = fields["id"], fields["question"], fields["answer"]
    question = _text(_require(record, q_key, loc), q_key, loc)
    answer = _answer(_require(record, a_key, loc), a_key, answer_type, loc)
    if id_key in record:
        ident = _ident(record[id_key], id_key, loc)
    elif id_key != DEFAULT_FIELDS["id"]:
        # The user named an id field explicitly: a typo should fail, not quietly fall back to line ids.
        raise loc.error("required field is missing", id_key)
    else:
        ident = fallback_id
    meta = {k: v for k, v in record.items() if k not in (id_key, q_key, a_key)}
    return Example(ident, question, answer, cast(AnswerType, answer_type), meta)


def _done(out: list[Example], limit: int | None) -> bool:
    return limit is not None and len(out) >= limit


def _nonempty(out: list[Example], path: Path, what: str = "examples") -> list[Example]:
    if not out:
        raise DataError(path, f"no {what} found")
    return out
