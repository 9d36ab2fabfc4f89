"""Loaders of user-described data: JSON Lines and CSV files with a field mapping, Hugging Face hub datasets
(``hf``, optional ``datasets`` package), and robusteval's own example format (``examples``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from robusteval.data.example import Example
from robusteval.data.loaders.fields import (
    _ANSWER_TYPES,
    DEFAULT_FIELDS,
    _done,
    _generic_example,
    _ident,
    _Ids,
    _Loc,
    _nonempty,
    _require,
    _resolve_fields,
    _text,
    _type_name,
)
from robusteval.data.loaders.files import _check_file, _iter_text_lines, jsonl_examples
from robusteval.data.loaders.registry import register_dataset
from robusteval.errors import DataError, UserError


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
    ids = _Ids()

    def example(record: dict[str, Any], lineno: int, loc: _Loc) -> Example:
        made = _generic_example(
            record, fields=fields, answer_type=answer_type, fallback_id=f"{path.stem}-{lineno - 1}", loc=loc
        )
        ids.add(made.id, loc, fields["id"])
        return made

    return jsonl_examples(path, limit, example)


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
    ids = _Ids()

    def example(record: dict[str, Any], lineno: int, loc: _Loc) -> Example:
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
        return Example(ident, question, answer, answer_type, meta)  # type: ignore[arg-type]

    return jsonl_examples(Path(path), limit, example)
