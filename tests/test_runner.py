"""run_units: compute only what is missing, commit per unit, return records in item order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from robusteval.runner import run_units
from robusteval.store import RunStore, unit_key

STAGE = "square"


class Squarer:
    """A real compute function that records every batch it was given."""

    def __init__(self, fail_on_call: int | None = None):
        self.batches: list[list[int]] = []
        self.fail_on_call = fail_on_call

    def __call__(self, batch: list[int]) -> list[dict[str, Any]]:
        if self.fail_on_call is not None and len(self.batches) + 1 == self.fail_on_call:
            raise KeyboardInterrupt  # what Ctrl-C looks like in the middle of a batch
        self.batches.append(list(batch))
        return [{"item": x, "square": x * x} for x in batch]

    @property
    def computed(self) -> list[int]:
        return [x for batch in self.batches for x in batch]


def key_of(item: int) -> str:
    return unit_key(STAGE, item)


def run(store: RunStore, items: list[int], compute: Squarer, batch_size: int = 1) -> list[dict[str, Any]]:
    return run_units(store, STAGE, items, key_of, compute, id_of=lambda x: f"id-{x}", batch_size=batch_size)


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    with RunStore.open(tmp_path / "run") as s:
        yield s


def test_computes_everything_once_in_item_order(store: RunStore) -> None:
    items = [5, 3, 9, 1, 7]
    compute = Squarer()
    records = run(store, items, compute, batch_size=2)
    assert records == [{"item": x, "square": x * x} for x in items]
    assert sorted(compute.computed) == sorted(items)
    assert store.keys(STAGE) == {key_of(x) for x in items}
    assert [u["example_id"] for u in store.iter_units(STAGE)] == [f"id-{x}" for x in items]
    assert all(u["seconds"] is not None and u["seconds"] >= 0 for u in store.iter_units(STAGE))


def test_second_run_computes_nothing(store: RunStore) -> None:
    items = list(range(6))
    first = run(store, items, Squarer(), batch_size=4)
    again = Squarer()
    assert run(store, items, again, batch_size=4) == first
    assert again.batches == []


def test_only_missing_keys_are_computed(store: RunStore) -> None:
    for x in (2, 4):
        store.put(STAGE, key_of(x), {"item": x, "square": -1, "stored": True})
    compute = Squarer()
    items = [1, 2, 3, 4, 5]
    records = run(store, items, compute, batch_size=10)
    assert compute.batches == [[1, 3, 5]]  # one batch, only the missing items, in item order
    # Stored records win (they are not recomputed) and come back in item order.
    assert [r["item"] for r in records] == items
    assert records[1] == {"item": 2, "square": -1, "stored": True}
    assert records[2] == {"item": 3, "square": 9}


def test_records_follow_item_order_not_storage_order(store: RunStore) -> None:
    run(store, [9, 8, 7], Squarer())
    compute = Squarer()
    records = run(store, [7, 1, 8, 9], compute)
    assert [r["item"] for r in records] == [7, 1, 8, 9]
    assert compute.computed == [1]


def test_resume_after_interrupt(store: RunStore) -> None:
    items = list(range(10))
    crashing = Squarer(fail_on_call=3)  # two batches of 3 finish, the third is interrupted
    with pytest.raises(KeyboardInterrupt):
        run(store, items, crashing, batch_size=3)
    assert crashing.computed == [0, 1, 2, 3, 4, 5]
    assert store.keys(STAGE) == {key_of(x) for x in range(6)}  # every finished unit was committed
    created = {u["key"]: u["created"] for u in store.iter_units(STAGE)}

    resumed = Squarer()
    records = run(store, items, resumed, batch_size=3)
    assert resumed.computed == [6, 7, 8, 9]  # nothing computed twice
    assert records == [{"item": x, "square": x * x} for x in items]
    assert {u["key"]: u["created"] for u in store.iter_units(STAGE) if u["key"] in created} == created
    assert len(store.keys(STAGE)) == 10


def test_resume_in_a_new_store_process(tmp_path: Path) -> None:
    """Resuming through a freshly opened store (what a re-run does) sees the committed units."""
    items = list(range(7))
    with RunStore.open(tmp_path / "run", identity={"x": 1}) as first, pytest.raises(KeyboardInterrupt):
        run(first, items, Squarer(fail_on_call=2), batch_size=4)
    with RunStore.open(tmp_path / "run", identity={"x": 1}) as second:
        compute = Squarer()
        assert [r["item"] for r in run(second, items, compute, batch_size=4)] == items
        assert compute.computed == [4, 5, 6]


@pytest.mark.parametrize(("batch_size", "expected"), [(1, [1] * 7), (3, [3, 3, 1]), (7, [7]), (50, [7])])
def test_batch_size_is_respected(store: RunStore, batch_size: int, expected: list[int]) -> None:
    compute = Squarer()
    run(store, list(range(7)), compute, batch_size=batch_size)
    assert [len(b) for b in compute.batches] == expected


@pytest.mark.parametrize("batch_size", [0, -3])
def test_nonpositive_batch_size_means_one(store: RunStore, batch_size: int) -> None:
    compute = Squarer()
    run(store, [1, 2, 3], compute, batch_size=batch_size)
    assert compute.batches == [[1], [2], [3]]


def test_batches_hold_only_missing_items_after_partial_run(store: RunStore) -> None:
    run(store, [0, 2, 4], Squarer())
    compute = Squarer()
    run(store, list(range(8)), compute, batch_size=2)
    assert compute.batches == [[1, 3], [5, 6], [7]]


def test_empty_items(store: RunStore) -> None:
    compute = Squarer()
    assert run(store, [], compute, batch_size=4) == []
    assert compute.batches == []


def test_wrong_record_count_is_an_error_and_stores_nothing(store: RunStore) -> None:
    def short(batch: list[int]) -> list[dict[str, Any]]:
        return [{"item": x} for x in batch[:-1]]

    with pytest.raises(RuntimeError, match="2 records for 3 items"):
        run_units(store, STAGE, [1, 2, 3], key_of, short, batch_size=3)
    assert store.keys(STAGE) == set()


def test_stages_are_independent(store: RunStore) -> None:
    run(store, [1, 2], Squarer())
    compute = Squarer()
    records = run_units(store, "other", [1, 2], key_of, compute)
    assert compute.computed == [1, 2]
    assert [r["item"] for r in records] == [1, 2]
    assert store.stages() == {STAGE: 2, "other": 2}
