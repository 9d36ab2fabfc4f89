"""Line-accurate file reading: every decoding or syntax error is pinned to its 1-based line.

Text files are decoded lazily line by line (a bad byte is reported on its line; a UTF-8 BOM is tolerated).
Whole-document JSON is walked element by element with :class:`_JsonScanner`, and :class:`_LineIndex` maps each
element's offset back to its line: ``json.loads`` would give no positions for array elements.
"""

from __future__ import annotations

import codecs
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from robusteval.data.example import Example
from robusteval.data.loaders.fields import _done, _Loc, _nonempty, _type_name
from robusteval.errors import DataError


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


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; one line is parsed per step. A file that cannot be
    read, a bad byte, invalid JSON or a line that is not an object raises a :class:`DataError` naming the line."""
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


def jsonl_examples(
    path: Path, limit: int | None, example: Callable[[dict[str, Any], int, _Loc], Example | None]
) -> list[Example]:
    """The examples of a JSON Lines file: ``example(record, line number, loc)`` for each record (None skips the
    record), read lazily until ``limit`` examples are made (0: none, the file is only checked). A file with no
    example raises a :class:`DataError`."""
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    for lineno, record in iter_jsonl(path):
        made = example(record, lineno, _Loc(path, lineno))
        if made is None:
            continue
        out.append(made)
        if _done(out, limit):
            break
    return _nonempty(out, path)


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


@contextmanager
def json_document(path: Path) -> Iterator[tuple[_LineIndex, _JsonScanner]]:
    """The file as one JSON document to walk: its line index and a scanner at its start. Invalid JSON met inside
    the block raises a :class:`DataError` naming the line."""
    text = _read_text(path)
    try:
        yield _LineIndex(text), _JsonScanner(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None


def read_json(path: Path) -> Any:
    """A file holding one JSON document, parsed; a missing, unreadable, non-UTF-8 or invalid file raises a
    :class:`DataError` naming it (and the line)."""
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None


_iter_jsonl = iter_jsonl  # the name before it became public
