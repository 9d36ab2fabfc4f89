"""The one loop: for each unit not yet stored -> compute -> commit, with a progress bar.

Work is done in batches (backends are fastest batched) but committed per unit, so a kill loses at most
the batches in flight and a re-run computes only what is missing. The batches go to the current executor
(:mod:`robusteval.executors`: in process by default, or Ray workers); whichever computes them, this process
commits each batch the moment it comes back, and is the only writer of the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from robusteval.executors import current_executor
from robusteval.executors.base import chunks
from robusteval.progress import progress_bar
from robusteval.store import RunStore

T = TypeVar("T")


def distributed() -> bool:
    """True when batches run in other processes (the executor in force has workers): what a caller that picks
    its own batch size asks, without importing executors itself."""
    return current_executor().distributed


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
    compute_units(store, stage, [items[i] for i in todo], [keys[i] for i in todo], compute, id_of=id_of,
                  batch_size=batch_size, description=description, total=len(set(keys)))
    out = []
    for key in keys:
        record = store.get(stage, key)
        if record is None:  # pragma: no cover - would mean the database lost a committed row
            raise RuntimeError(f"{stage}: unit {key} missing after commit")
        out.append(record)
    return out


def compute_units(
    store: RunStore,
    stage: str,
    items: Sequence[T],
    keys: Sequence[str],
    compute: Callable[[list[T]], list[dict[str, Any]]],
    *,
    id_of: Callable[[T], str | None] | None = None,
    batch_size: int = 1,
    description: str | None = None,
    total: int | None = None,
    quiet: bool = False,
) -> None:
    """Compute ``items`` (none of them stored; ``keys[i]`` is item i's key) with the current executor and
    commit each batch as it comes back. ``total``: the units of the whole stage, for the progress bar;
    ``quiet``: no progress bar or lines (a single judge verdict inside an attack)."""
    batches = chunks(list(range(len(items))), batch_size)
    total = len(items) if total is None else total
    shown = 0 if quiet else total  # a progress bar of nothing draws and logs nothing
    with progress_bar(shown, description or stage, completed=shown - len(items) if shown else 0,
                      in_flight=batch_size) as advance:
        for result in current_executor().map_batches(stage, [[items[i] for i in b] for b in batches], compute,
                                                     store):
            batch_idx = batches[result.index]
            if len(result.records) != len(batch_idx):
                raise RuntimeError(f"{stage}: compute returned {len(result.records)} records for "
                                   f"{len(batch_idx)} items")
            for unit in result.side_units:  # a worker's cache writes (judge verdicts...): the first one stays
                if store.get(unit["stage"], unit["key"]) is None:
                    store.put(unit["stage"], unit["key"], unit["record"], example_id=unit["example_id"],
                              seconds=unit["seconds"])
            for i, record in zip(batch_idx, result.records, strict=True):
                store.put(stage, keys[i], record, example_id=id_of(items[i]) if id_of else None,
                          seconds=result.seconds)
            advance(len(batch_idx))
