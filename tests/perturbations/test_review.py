"""The review loop's library: items read from real perturbed files and run stores, sampling (seeded,
stratified by method, never an edit already labelled), labels keyed by the edit (a relabelled edit counts
once, the last label wins), exports checked line by line, and the preservation rate with n and interval."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.perturbations import build_perturbation
from robusteval.perturbations.dataset import PERTURB_STAGE, perturb_examples
from robusteval.perturbations.review import (
    Label,
    LabelStore,
    ReviewItem,
    char_diff,
    edit_key,
    items_from_records,
    load_items,
    preservation,
    preservation_lines,
    read_export,
    sample_items,
)
from robusteval.perturbations.review.sampling import allocate
from robusteval.store import RunStore, unit_key

SENTENCES = [f"Sentence number {word} tells how the farmer sold {word} apples at the market on Monday."
             for word in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
                          "juliet", "kilo", "lima")]


def perturbed_records(method: str, seed: int = 0) -> list[dict]:
    examples = [Example(f"q{i}", text, "yes", "yesno", {}) for i, text in enumerate(SENTENCES)]
    results = perturb_examples(examples, build_perturbation(method, "en"), fields=["text"], seed=seed)
    return [r.to_record(seed=seed, budget=None) for r in results]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_items_are_the_changed_fields_keyed_by_method_and_texts(tmp_path: Path) -> None:
    records = perturbed_records("C-swap")
    items = load_items(write_jsonl(tmp_path / "swap.jsonl", records))
    assert len(items) == len(SENTENCES)
    for item, record in zip(items, records, strict=True):
        assert item.method == "C-swap" and item.field == "text" and item.example_id == record["id"]
        assert item.original == record["perturbation"]["fields"]["text"]["original"] != item.perturbed
        assert item.perturbed == record["question"]
    # The key is the edit: the method and both texts, nothing else (not the id, not the file).
    one = items[0]
    assert one.key == edit_key("C-swap", one.original, one.perturbed)
    assert one.key != edit_key("C-delete", one.original, one.perturbed)
    assert one.key != edit_key("C-swap", one.original, one.perturbed + " ")
    moved = ReviewItem(one.method, one.original, one.perturbed, example_id="elsewhere", field="hypothesis")
    assert moved.key == one.key
    # An edit made twice (two examples, same text) is one item; an unchanged field is none.
    twice = [records[0], {**records[0], "id": "copy"}, {**records[1], "question": records[1]["perturbation"][
        "fields"]["text"]["original"]}]
    assert [i.example_id for i in items_from_records(twice)] == [records[0]["id"]]


def test_items_from_a_run_store_and_bad_sources(tmp_path: Path) -> None:
    records = perturbed_records("C-delete")
    run = tmp_path / "run"
    with RunStore.open(run, {"command": "robustness", "test": 1}) as store:
        for record in records:
            store.put(PERTURB_STAGE, unit_key("C-delete", "en", record["id"]), record, example_id=record["id"])
    assert [i.perturbed for i in load_items(run)] == [r["question"] for r in records]
    with pytest.raises(UserError, match="no such file"):
        load_items(tmp_path / "missing.jsonl")
    plain = write_jsonl(tmp_path / "plain.jsonl", [{"id": "1", "question": "q", "answer": "a"}])
    with pytest.raises(UserError, match="record 1 has no perturbation block"):
        load_items(plain)
    (tmp_path / "broken.jsonl").write_text('{"id": 1}\n{not json\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"broken.jsonl:2: not JSON"):
        load_items(tmp_path / "broken.jsonl")


def items_of(methods: dict[str, int]) -> list[ReviewItem]:
    return [ReviewItem(method, f"{method} text {i}", f"{method} text {i}!") for method, n in methods.items()
            for i in range(n)]


def test_sampling_is_seeded_stratified_and_independent_of_order() -> None:
    items = items_of({"W-synonym": 40, "C-homophone": 30, "S-backtranslation": 4})
    sample = sample_items(items, 20, seed=3)
    # Even over methods; the short one gives what it has, the rest goes to the others.
    assert sample.per_method() == {"C-homophone": 8, "S-backtranslation": 4, "W-synonym": 8}
    assert sample.available == {"C-homophone": 30, "S-backtranslation": 4, "W-synonym": 40}
    shuffled = items[:]
    random.Random(1).shuffle(shuffled)
    again = sample_items(shuffled, 20, seed=3)
    assert again.items == sample.items and again.sample_id == sample.sample_id
    other = sample_items(items, 20, seed=4)
    assert {i.key for i in other.items} != {i.key for i in sample.items} and other.sample_id != sample.sample_id
    # Shown interleaved, not method by method.
    methods = [i.method for i in sample.items]
    assert methods != sorted(methods)
    assert len({i.key for i in sample.items}) == 20
    assert allocate(7, {"a": 10, "b": 1, "c": 10}) == {"a": 3, "b": 1, "c": 3}
    assert allocate(50, {"a": 2, "b": 3}) == {"a": 2, "b": 3}


def test_sampling_never_asks_a_labelled_edit_again() -> None:
    items = items_of({"W-synonym": 12, "C-homophone": 12})
    first = sample_items(items, 10, seed=0)
    labelled = {item.key for item in first.items}
    second = sample_items(items, 100, seed=0, labelled=labelled)
    assert not labelled & {item.key for item in second.items}
    assert len(second.items) == 14 and second.skipped_labelled == 10
    assert sample_items(items, 5, seed=0, labelled={i.key for i in items}).items == ()


def label(item: ReviewItem, name: str) -> Label:
    return Label(item.key, item.method, name, item.original, item.perturbed)


def test_a_relabelled_edit_counts_once_with_its_last_label(tmp_path: Path) -> None:
    items = items_of({"W-synonym": 5})
    store = LabelStore(tmp_path / "labels.jsonl")
    assert store.add([label(items[0], "changed"), label(items[1], "same"), label(items[2], "same")]) == (3, 0)
    # Relabelled in a later session; the same label again is not written again.
    assert store.add([label(items[0], "same"), label(items[1], "same"), label(items[3], "ungrammatical")]) == (1, 1)
    assert len(store.all()) == 5
    current = store.current()
    assert len(current) == 4 and current[items[0].key].label == "same"
    rates = preservation(store.all())["W-synonym"]
    assert rates["n"] == 4 and rates["same"]["k"] == 3 and rates["changed"]["k"] == 0
    assert rates["ungrammatical"]["k"] == 1
    # Within one export too, the last line of an edit wins.
    assert preservation([label(items[4], "same"), label(items[4], "changed")])["W-synonym"]["changed"]["k"] == 1


def test_preservation_line_has_counts_and_a_wilson_interval() -> None:
    items = items_of({"W-synonym": 50, "C-homophone": 3})
    labels = [label(item, "same" if i < 41 else "changed") for i, item in enumerate(items[:50])]
    labels += [label(item, "same") for item in items[50:]]
    lines = preservation_lines(preservation(labels))
    assert lines[1] == ("W-synonym: same meaning 41/50 = 82% [69, 90]; changed 9/50 = 18% [10, 31]; "
                        "ungrammatical 0/50 = 0% [0, 7]")
    assert lines[0].startswith("C-homophone: same meaning 3/3 = 100% [44, 100]")


def test_exports_are_checked_line_by_line(tmp_path: Path) -> None:
    item = items_of({"W-synonym": 1})[0]
    good = label(item, "same").to_dict()
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(good) + "\n\n", encoding="utf-8")
    assert [lab.key for lab in read_export(path)] == [item.key]
    for bad, message in [({**good, "label": "fine"}, "field 'label' is 'fine'"),
                         ({**good, "perturbed": good["perturbed"] + "?"}, "does not match its method and texts"),
                         ({**good, "method": 3}, "field 'method' must be a string")]:
        path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
        with pytest.raises(UserError, match=rf"export.jsonl:2: .*{message}"):
            read_export(path)


def test_char_diff_covers_both_texts() -> None:
    runs = char_diff("他学习物理学", "他读书物理学")
    assert "".join(a for _, a, _ in runs) == "他学习物理学" and "".join(b for _, _, b in runs) == "他读书物理学"
    assert [op for op, _, _ in runs] == ["equal", "replace", "equal"]
