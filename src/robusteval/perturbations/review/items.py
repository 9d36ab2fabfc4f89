"""What a person reviews: one perturbed text field beside its original, read from a ``perturb`` output file or
from the perturbed examples a ``robustness`` (RB-index) run stored.

An item is keyed by the edit itself: a hash of the method, the original text and the perturbed text
(:func:`edit_key`). The same edit made again, in another file, run or seed, has the same key, so a label given
once applies to it everywhere, and no reviewed edit is asked twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.errors import UserError

#: Characters of the sha256 hex digest kept in a key (64 bits: no collision among any realistic labels store).
KEY_LENGTH = 16


def edit_key(method: str, original: str, perturbed: str) -> str:
    """The stable key of an edit: sha256 of the JSON list ``[method, original, perturbed]``, 16 hex digits."""
    payload = json.dumps([method, original, perturbed], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class ReviewItem:
    """One perturbed field: ``original`` became ``perturbed`` by ``method`` (``edits``: the method's own record
    of what changed, offsets into ``original``)."""

    method: str
    original: str
    perturbed: str
    example_id: str = ""
    field: str = "text"
    edits: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return edit_key(self.method, self.original, self.perturbed)


def items_from_records(records: Iterable[Mapping[str, Any]], *, source: str = "") -> list[ReviewItem]:
    """The changed fields of perturbed-example records (``perturb`` lines or stored ``perturbed_example``
    units), one item per distinct edit (an edit made twice is one item), in record order."""
    out: dict[str, ReviewItem] = {}
    for number, record in enumerate(records, 1):
        block = record.get("perturbation") if isinstance(record, Mapping) else None
        if not isinstance(block, Mapping) or not isinstance(block.get("fields"), Mapping):
            where = f"{source}: record {number}" if source else f"record {number}"
            raise UserError(f"{where} has no perturbation block: not a perturbed example (write one with "
                            "`robusteval perturb`)")
        for name, field in block["fields"].items():
            if not isinstance(field, Mapping):
                continue
            original = field.get("original")
            perturbed = _perturbed_text(record, str(name))
            if not isinstance(original, str) or perturbed is None or perturbed == original:
                continue
            method = str(field.get("method") or block.get("method") or "")
            edits = tuple(e for e in field.get("edits") or () if isinstance(e, Mapping))
            item = ReviewItem(method, original, perturbed, str(record.get("id", "")), str(name), edits)
            out.setdefault(item.key, item)
    return list(out.values())


def _perturbed_text(record: Mapping[str, Any], name: str) -> str | None:
    """The perturbed text of field ``name``: the question for ``text``/``premise``, else the meta key."""
    value = record.get("question") if name in ("text", "premise", "question") else (record.get("meta") or {}).get(name)
    return value if isinstance(value, str) else None


def load_items(source: str | os.PathLike[str]) -> list[ReviewItem]:
    """The items of a ``perturb`` output file (JSON Lines) or of a run directory's stored perturbed examples."""
    path = Path(source)
    if path.is_dir():
        from robusteval.perturbations.dataset import PERTURB_STAGE
        from robusteval.store import RunStore

        with RunStore.open_existing(path) as store:
            records = store.records(PERTURB_STAGE)
        if not records:
            raise UserError(f"{path}: the run stored no perturbed examples (only runs that generate perturbed "
                            "sets store them; for a set read from a file, review that file)")
        return items_from_records(records, source=str(path))
    if not path.is_file():
        raise UserError(f"{path}: no such file or run directory")
    return items_from_records(_read_jsonl(path), source=str(path))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise UserError(f"{path}:{number}: not a JSON object")
        records.append(record)
    return records
