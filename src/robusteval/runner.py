"""The one loop: for each unit not yet stored -> compute -> commit, with a progress bar.

Work is done in batches (backends are fastest batched) but committed per unit, so a kill loses at most
the batch in flight and a re-run computes only what is missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from robusteval.progress import progress_bar
from robusteval.store import RunStore

T = TypeVar("T")


def run_units(
    store: RunStore,
    stage: str,
    items: Sequence[T],
    key_of: Callable[[T], str],
    compute: Callable[[list[T]], list[dict[str, Any]]],
    *,
    id_of: Callable[[T], str] | None = None,
    batch_size: int = 1,
    description: str | None = None,
) -> list[dict[str, Any]]:
    """Return one record per item, in item order, computing only the items whose key is not stored."""
    keys = [key_of(item) for item in items]
    stored = store.keys(stage)
    # Items sharing a key are computed once.
    todo = list({key: i for i, key in reversed(list(enumerate(keys))) if key not in stored}.values())[::-1]
    total = len(set(keys))
    with progress_bar(total, description or stage, completed=total - len(todo)) as advance:
        for start in range(0, len(todo), max(1, batch_size)):
            batch_idx = todo[start : start + max(1, batch_size)]
            batch = [items[i] for i in batch_idx]
            began = time.perf_counter()
            records = compute(batch)
            if len(records) != len(batch):
                raise RuntimeError(f"{stage}: compute returned {len(records)} records for {len(batch)} items")
            seconds = (time.perf_counter() - began) / len(batch)
            for i, record in zip(batch_idx, records, strict=True):
                store.put(stage, keys[i], record, example_id=id_of(items[i]) if id_of else None, seconds=seconds)
            advance(len(batch))
    out = []
    for key in keys:
        record = store.get(stage, key)
        if record is None:  # pragma: no cover - would mean the database lost a committed row
            raise RuntimeError(f"{stage}: unit {key} missing after commit")
        out.append(record)
    return out
