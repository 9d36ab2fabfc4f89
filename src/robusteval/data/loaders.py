"""Dataset loaders and their registry.

Every loader turns one source (a file, or a Hugging Face hub dataset) into a list of :class:`Example`.
Loaders register by decorator (``@register_dataset(name, answer_type)``) and are reached through
:func:`load_dataset`; nothing is looked up with ``eval``.

Bad input never surfaces as a traceback: every problem becomes a one-line :class:`DataError` naming the file,
the 1-based line and the field. A file is always read and checked whole, also with ``limit`` (its content hash
covers the whole file anyway): a run that reads 3 examples and one that reads 10 accept the same files.
"""

from __future__ import annotations

import codecs
import csv
import inspect
import json
import math
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

from robusteval.data.answers import parse_number
from robusteval.data.example import AnswerType, Example
from robusteval.errors import DataError, UserError
from robusteval.store.sqlite import file_sha256

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_FIELDS",
    "DatasetLoader",
    "dataset_content_hash",
    "dataset_names",
    "load_dataset",
    "register_dataset",
]

DatasetLoader = Callable[..., list[Example]]

#: Directory holding the built-in datasets (``<dir>/gsm8k/test.jsonl`` ...) when no path is given.
DATA_DIR_ENV = "ROBUSTEVAL_DATA_DIR"

#: Our field names -> the file's field names, for the generic loaders (jsonl, csv, hf).
DEFAULT_FIELDS: dict[str, str] = {"id": "id", "question": "question", "answer": "answer"}

_ANSWER_TYPES: frozenset[str] = frozenset(get_args(AnswerType))


@dataclass(frozen=True)
class _Entry:
    loader: DatasetLoader
    answer_type: str
    params: frozenset[str]  # keyword parameters the loader accepts: decides what load_dataset may pass
    default_file: str | None  # relative to $ROBUSTEVAL_DATA_DIR
    streams: bool  # reads only ``limit`` records (hub datasets); file loaders always check the whole file


_REGISTRY: dict[str, _Entry] = {}


def register_dataset(
    name: str, answer_type: str, *, default_file: str | None = None, streams: bool = False
) -> Callable[[DatasetLoader], DatasetLoader]:
    """Register a loader under ``name``.

    ``answer_type`` is the type of every example (or the default, for loaders that take an ``answer_type``
    parameter). A loader is called as ``loader(path, limit=..., [fields=..., answer_type=..., split=...])``;
    the optional keywords are passed only when its signature names them.
    """
    if answer_type not in _ANSWER_TYPES:
        raise ValueError(f"unknown answer type {answer_type!r}; expected one of {sorted(_ANSWER_TYPES)}")

    def decorator(loader: DatasetLoader) -> DatasetLoader:
        if name in _REGISTRY:
            raise ValueError(f"dataset {name!r} is already registered")
        params = frozenset(inspect.signature(loader).parameters)
        _REGISTRY[name] = _Entry(loader, answer_type, params, default_file, streams)
        return loader

    return decorator


def dataset_names() -> list[str]:
    return sorted(_REGISTRY)


def load_dataset(
    name: str,
    path: str | Path | None = None,
    *,
    limit: int | None = None,
    fields: dict[str, str] | None = None,
    answer_type: str | None = None,
    split: str = "test",
) -> list[Example]:
    """Load dataset ``name`` from ``path`` (the first ``limit`` examples when given).

    ``fields`` and ``answer_type`` apply to the generic loaders (jsonl, csv, hf); the built-in datasets have a
    fixed format and type, and a conflicting value is an error rather than silently ignored. Without ``path``
    a built-in dataset is read from ``$ROBUSTEVAL_DATA_DIR``.
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise UserError(f"unknown dataset {name!r}; available: {', '.join(dataset_names())}")
    if limit is not None and limit < 0:
        raise UserError(f"limit must be >= 0, got {limit}")
    if path is None:
        path = _default_path(name, entry)

    kwargs: dict[str, Any] = {"limit": limit if entry.streams else None}
    if "fields" in entry.params:
        kwargs["fields"] = _resolve_fields(fields)
    elif fields:
        raise UserError(f"dataset {name!r} has a fixed format; a field mapping applies to jsonl, csv and hf")
    if "answer_type" in entry.params:
        chosen = answer_type or entry.answer_type
        if chosen not in _ANSWER_TYPES:
            raise UserError(
                f"unknown answer type {chosen!r}; expected one of {', '.join(sorted(_ANSWER_TYPES))}"
            )
        kwargs["answer_type"] = chosen
    elif answer_type is not None and answer_type != entry.answer_type:
        raise UserError(f"dataset {name!r} has answer type {entry.answer_type!r}, not {answer_type!r}")
    if "split" in entry.params:
        kwargs["split"] = split
    if limit == 0:
        return []
    examples = entry.loader(path, **kwargs)
    return examples if limit is None else examples[:limit]


def dataset_content_hash(path: str | Path) -> str:
    """sha256 of the file's bytes: recorded with a run so results are tied to the exact data."""
    path = Path(path)
    _check_file(path)
    try:
        return file_sha256(path)
    except OSError as exc:
        raise DataError(path, f"cannot read file: {exc.strerror or exc}") from None


def _default_path(name: str, entry: _Entry) -> Path:
    if entry.default_file is None:
        raise UserError(f"dataset {name!r} needs a path")
    root = os.environ.get(DATA_DIR_ENV)
    if not root:
        raise UserError(
            f"dataset {name!r}: no path given; pass one or set {DATA_DIR_ENV} to the directory "
            f"holding {entry.default_file}"
        )
    return Path(root) / entry.default_file


def _resolve_fields(fields: Mapping[str, str] | None) -> dict[str, str]:
    unknown = set(fields or {}) - set(DEFAULT_FIELDS)
    if unknown:
        raise UserError(
            f"unknown field name(s) {', '.join(sorted(unknown))} in the field mapping; "
            f"expected {', '.join(DEFAULT_FIELDS)}"
        )
    return {**DEFAULT_FIELDS, **(fields or {})}


# --------------------------------------------------------------------------------------------- file access


def _check_file(path: Path) -> None:
    try:
        if not path.exists():
            raise DataError(path, "file not found")
        if path.is_dir():
            inside = sorted(p.name for p in path.iterdir() if p.is_file())[:3]
            hint = f" such as {', '.join(str(path / n) for n in inside)}" if inside else ""
            raise DataError(path, f"is a directory, not a data file; pass the file itself{hint}")
        if not path.is_file():
            raise DataError(path, "not a regular file")
        if path.stat().st_size == 0:
            raise DataError(path, "empty file")
    except OSError as exc:
        raise DataError(path, f"cannot read file: {exc.strerror or exc}") from None


def _iter_text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, decoded line) reading bytes lazily, so a bad byte is pinned to its line."""
    _check_file(path)
    offset = 0
    try:
        with path.open("rb") as handle:
            for lineno, raw in enumerate(handle, 1):
                body, base = raw, offset
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):  # tolerate the BOM Excel writes
                    body, base = raw[len(codecs.BOM_UTF8) :], offset + len(codecs.BOM_UTF8)
                try:
                    text = body.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(
                        path, f"not valid UTF-8 (byte offset {base + exc.start})", line=lineno
                    ) from None
                offset += len(raw)
                yield lineno, text
    except OSError as exc:
        raise DataError(path, f"cannot read file: {exc.strerror or exc}") from None


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; one line is parsed per step."""
    seen = False
    for lineno, text in _iter_text_lines(path):
        if not text.strip():
            continue
        seen = True
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=lineno) from None
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {_type_name(record)}", line=lineno)
        yield lineno, record
    if not seen:
        raise DataError(path, "empty file (only blank lines)")


def _read_text(path: Path) -> str:
    """The whole file as text, for formats that are one JSON document."""
    _check_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read file: {exc.strerror or exc}") from None
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise DataError(path, f"not valid UTF-8 (byte offset {offset})", line=line) from None
    if not text.strip():
        raise DataError(path, "empty file (only whitespace)")
    return text


class _LineIndex:
    """Character offset -> 1-based line number."""

    def __init__(self, text: str):
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect_right(self._starts, offset)


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _JsonScanner:
    """Walks one JSON document element by element.

    ``json.loads`` would give no positions for array elements; walking with ``raw_decode`` gives each record's
    line for error messages and lets ``limit`` stop before later records are parsed.
    """

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def _skip_ws(self) -> str:
        self.pos = cast(re.Match[str], _WS.match(self.text, self.pos)).end()
        return self.text[self.pos : self.pos + 1]

    def _fail(self, message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, self.text, self.pos)

    def peek(self) -> str:
        return self._skip_ws()

    def value(self) -> Any:
        self._skip_ws()
        value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        return value

    def array(self) -> Iterator[tuple[int, Any]]:
        """Yield (start offset, element); the scanner must stand on '['."""
        if self._skip_ws() != "[":
            raise self._fail("Expecting '['")
        self.pos += 1
        if self._skip_ws() == "]":
            self.pos += 1
            return
        while True:
            start = self.pos
            yield start, self.value()
            char = self._skip_ws()
            if char not in (",", "]"):
                raise self._fail("Expecting ',' delimiter")
            self.pos += 1
            if char == "]":
                return
            self._skip_ws()

    def members(self) -> Iterator[str]:
        """Yield each key of an object; the caller consumes the value before asking for the next key."""
        if self._skip_ws() != "{":
            raise self._fail("Expecting '{'")
        self.pos += 1
        if self._skip_ws() == "}":
            self.pos += 1
            return
        while True:
            if self._skip_ws() != '"':
                raise self._fail("Expecting property name enclosed in double quotes")
            key = self.value()
            if self._skip_ws() != ":":
                raise self._fail("Expecting ':' delimiter")
            self.pos += 1
            yield key
            char = self._skip_ws()
            if char not in (",", "}"):
                raise self._fail("Expecting ',' delimiter")
            self.pos += 1
            if char == "}":
                return

    def end(self) -> None:
        if self._skip_ws():
            raise self._fail("Extra data")


def _json_error(path: Path, exc: json.JSONDecodeError) -> DataError:
    return DataError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno)


# ------------------------------------------------------------------------------------------ field checking


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


# ------------------------------------------------------------------------------------------------ loaders


@register_dataset("gsm8k", "number", default_file="gsm8k/test.jsonl")
def _load_gsm8k(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    ids = _Ids()
    for lineno, record in _iter_jsonl(path):
        loc = _Loc(path, lineno)
        question = _text(_require(record, "question", loc), "question", loc)
        solution = _text(_require(record, "answer", loc), "answer", loc)
        _, marker, final = solution.rpartition("#### ")
        if not marker:
            raise loc.error("no '#### ' before the final answer", "answer")
        gold = final.strip().replace(",", "")  # "1,000" -> "1000"
        if not gold:
            raise loc.error("nothing after '#### '", "answer")
        if parse_number(gold) is None:
            raise loc.error(f"expected a number after '#### ', got {gold[:60]!r}", "answer")
        ident = f"gsm8k-{lineno - 1}"  # 0-based line index: stable however many lines a run reads
        ids.add(ident, loc, None)
        out.append(Example(ident, question, gold, "number", {"solution": solution}))
        if _done(out, limit):
            break
    return _nonempty(out, path)


@register_dataset("singleeq", "number", default_file="singleeq/questions.json")
def _load_singleeq(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    text = _read_text(path)
    lines = _LineIndex(text)
    scanner = _JsonScanner(text)
    ids = _Ids()
    try:
        if scanner.peek() != "[":
            raise DataError(path, "expected a JSON array of problems", line=lines.line(scanner.pos))
        for index, (start, record) in enumerate(scanner.array()):
            loc = _Loc(path, lines.line(start), f"record {index}")
            if not isinstance(record, dict):
                raise loc.error(f"expected a JSON object, got {_type_name(record)}")
            question = _text(_require(record, "sQuestion", loc), "sQuestion", loc)
            solutions = _require(record, "lSolutions", loc)
            if not isinstance(solutions, list) or not solutions:
                got = "an empty array" if solutions == [] else _type_name(solutions)
                raise loc.error(f"expected a non-empty array, got {got}", "lSolutions")
            answer = _number(solutions[0], "lSolutions", loc)
            ident = f"singleeq-{_ident(_require(record, 'iIndex', loc), 'iIndex', loc)}"
            ids.add(ident, loc, "iIndex")
            meta = {k: v for k, v in record.items() if k not in ("sQuestion", "iIndex")}
            out.append(Example(ident, question, answer, "number", meta))
            if _done(out, limit):
                break
        else:
            scanner.end()
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None
    return _nonempty(out, path)


@register_dataset("strategyqa", "yesno", default_file="strategyqa/task.json")
def _load_strategyqa(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    text = _read_text(path)
    lines = _LineIndex(text)
    scanner = _JsonScanner(text)
    found = False
    try:
        if scanner.peek() != "{":
            raise DataError(path, "expected a BIG-bench task object", line=lines.line(scanner.pos))
        for key in scanner.members():
            if key != "examples" or found:
                scanner.value()  # other task metadata (canary, metrics, ...) is not needed
                continue
            found = True
            if scanner.peek() != "[":
                line = lines.line(scanner.pos)
                raise DataError(
                    path, f"expected an array, got {_type_name(scanner.value())}", line=line, field=key
                )
            for index, (start, record) in enumerate(scanner.array()):
                out.append(
                    _strategyqa_example(record, index, _Loc(path, lines.line(start), f"record {index}"))
                )
                if _done(out, limit):
                    return out
        scanner.end()
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None
    if not found:
        raise DataError(path, "required field is missing", line=1, field="examples")
    return _nonempty(out, path)


def _strategyqa_example(record: object, index: int, loc: _Loc) -> Example:
    if not isinstance(record, dict):
        raise loc.error(f"expected a JSON object, got {_type_name(record)}")
    question = _text(_require(record, "input", loc), "input", loc)
    scores = _require(record, "target_scores", loc)
    if not isinstance(scores, dict):
        raise loc.error(f"expected an object, got {_type_name(scores)}", "target_scores")
    for label, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise loc.error(
                f"score of {label!r}: expected a number, got {_type_name(score)}", "target_scores"
            )
    positive = [label for label, score in scores.items() if score > 0]
    if len(positive) != 1 or positive[0].strip().lower() not in ("yes", "no"):
        raise loc.error(f"expected exactly one positive score, on Yes or No; got {scores}", "target_scores")
    meta: dict[str, Any] = {}
    if "target" in record:
        meta["target"] = record["target"]  # the answer plus a short explanation
    return Example(f"strategyqa-{index}", question, positive[0].strip().lower(), "yesno", meta)


_OCNLI_LABELS = frozenset({"entailment", "neutral", "contradiction"})


@register_dataset("ocnli", "label", default_file="ocnli/dev.json")
def _load_ocnli(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    ids = _Ids()
    for lineno, record in _iter_jsonl(path):  # JSON Lines despite the .json name
        loc = _Loc(path, lineno)
        label = _text(_require(record, "label", loc), "label", loc)
        if label == "-":
            continue  # no annotator majority; the OCNLI README says to exclude these
        if label not in _OCNLI_LABELS:
            raise loc.error(
                f"expected one of {', '.join(sorted(_OCNLI_LABELS))} or '-', got {label!r}", "label"
            )
        premise = _text(_require(record, "sentence1", loc), "sentence1", loc)
        hypothesis = _text(_require(record, "sentence2", loc), "sentence2", loc)
        ident = f"ocnli-{_ident(_require(record, 'id', loc), 'id', loc)}"
        ids.add(ident, loc, "id")
        meta = {"hypothesis": hypothesis, "genre": record.get("genre"), "level": record.get("level")}
        out.append(Example(ident, premise, label, "label", meta))
        if _done(out, limit):
            break
    return _nonempty(out, path)


@register_dataset("jsonl", "number")
def _load_jsonl(
    path: str | Path,
    *,
    limit: int | None = None,
    fields: Mapping[str, str] | None = None,
    answer_type: str = "number",
) -> list[Example]:
    path = Path(path)
    fields = _resolve_fields(fields)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    ids = _Ids()
    for lineno, record in _iter_jsonl(path):
        loc = _Loc(path, lineno)
        example = _generic_example(
            record, fields=fields, answer_type=answer_type, fallback_id=f"{path.stem}-{lineno - 1}", loc=loc
        )
        ids.add(example.id, loc, fields["id"])
        out.append(example)
        if _done(out, limit):
            break
    return _nonempty(out, path)


@register_dataset("csv", "number")
def _load_csv(
    path: str | Path,
    *,
    limit: int | None = None,
    fields: Mapping[str, str] | None = None,
    answer_type: str = "number",
) -> list[Example]:
    """Fallback ids are "<stem>-<0-based data row index>": CSV records may span several lines."""
    path = Path(path)
    fields = _resolve_fields(fields)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    # csv reads from our line generator, so decoding stays lazy and a bad byte is pinned to its line. Blank
    # lines are remembered because DictReader skips them: a record starts at the first non-blank line after
    # the previous record ended.
    blank: set[int] = set()

    def source() -> Iterator[str]:
        for lineno, text in _iter_text_lines(path):
            if not text.strip("\r\n"):
                blank.add(lineno)
            yield text

    reader = csv.DictReader(source())
    ids = _Ids()
    try:
        header = reader.fieldnames
        if not header:
            raise DataError(path, "no header row", line=1)
        required = ["question", "answer"] + (["id"] if fields["id"] != DEFAULT_FIELDS["id"] else [])
        for key in required:
            if fields[key] not in header:
                raise DataError(
                    path, f"column not in the header ({', '.join(header)})", line=1, field=fields[key]
                )
        end = reader.line_num
        for index, row in enumerate(reader):
            line = end + 1
            while line in blank:
                line += 1
            end = reader.line_num
            loc = _Loc(path, line)
            if None in row:  # DictReader puts surplus cells under the key None
                raise loc.error(f"more cells than the {len(header)} header columns")
            record = {k: v for k, v in row.items() if v is not None}  # short rows: missing cells are absent
            example = _generic_example(
                record, fields=fields, answer_type=answer_type, fallback_id=f"{path.stem}-{index}", loc=loc
            )
            ids.add(example.id, loc, fields["id"])
            out.append(example)
            if _done(out, limit):
                break
    except csv.Error as exc:
        raise DataError(path, f"invalid CSV: {exc}", line=reader.line_num) from None
    return _nonempty(out, path, "data rows")


@register_dataset("hf", "number", streams=True)
def _load_hf(
    path: str | Path,
    *,
    limit: int | None = None,
    fields: Mapping[str, str] | None = None,
    answer_type: str = "number",
    split: str = "test",
) -> list[Example]:
    """``path`` is "hub_id[:config]", loaded with ``datasets.load_dataset``."""
    spec = str(path)
    hub_id, _, config = spec.partition(":")
    fields = _resolve_fields(fields)
    if not hub_id:
        raise UserError(f"hf dataset spec {spec!r}: expected 'hub_id[:config]'")
    try:
        import datasets  # optional dependency: only this loader needs it
    except ImportError:
        raise UserError(
            "the 'hf' dataset loader needs the datasets package: pip install datasets "
            "(or pip install 'robusteval[hf-datasets]')"
        ) from None
    out: list[Example] = []
    if limit == 0:
        return out
    try:
        rows = datasets.load_dataset(hub_id, config or None, split=split)
    except Exception as exc:  # hub, network and config failures all become one line for the user
        lines = str(exc).strip().splitlines()
        detail = f": {lines[0]}" if lines else ""
        raise UserError(
            f"hf dataset {spec!r} split {split!r}: cannot load: {type(exc).__name__}{detail}"
        ) from None
    where = f"{spec} [{split}]"
    ids = _Ids()
    stem = hub_id.rsplit("/", 1)[-1]
    for index, row in enumerate(rows):
        loc = _Loc(where, None, f"row {index}")
        example = _generic_example(
            dict(row), fields=fields, answer_type=answer_type, fallback_id=f"{stem}-{index}", loc=loc
        )
        ids.add(example.id, loc, fields["id"])
        out.append(example)
        if _done(out, limit):
            break
    if not out:
        raise UserError(f"hf dataset {spec!r} split {split!r} has no rows")
    return out


@register_dataset("examples", "number")
def _load_examples(path: str | Path, *, limit: int | None = None) -> list[Example]:
    """robusteval's own example format (one ``Example.to_dict()`` per line), as ``robusteval perturb`` writes.

    Each line carries its answer type, so perturbed copies of any dataset read back as they were.
    """
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    ids = _Ids()
    for lineno, record in _iter_jsonl(path):
        loc = _Loc(path, lineno)
        ident = _ident(_require(record, "id", loc), "id", loc)
        ids.add(ident, loc, "id")
        answer_type = _text(_require(record, "answer_type", loc), "answer_type", loc)
        if answer_type not in _ANSWER_TYPES:
            raise loc.error(f"expected one of {', '.join(sorted(_ANSWER_TYPES))}, got {answer_type!r}", "answer_type")
        meta = record.get("meta") or {}
        if not isinstance(meta, dict):
            raise loc.error(f"expected an object, got {_type_name(meta)}", "meta")
        if "perturbation" in record:
            meta = {**meta, "perturbation": record["perturbation"]}
        question = _text(_require(record, "question", loc), "question", loc)
        answer = _text(_require(record, "answer", loc), "answer", loc)
        out.append(Example(ident, question, answer, answer_type, meta))  # type: ignore[arg-type]
        if _done(out, limit):
            break
    return _nonempty(out, path)
