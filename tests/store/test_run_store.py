"""RunStore: one SQLite file per run directory, committed per unit, guarded by the run's identity."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robusteval import __version__
from robusteval.errors import UserError
from robusteval.store import DB_NAME, SUMMARY_NAME, RunStore, file_sha256, unit_key

IDENTITY = {"command": "eval", "model": "hf:/m", "seed": 0, "max_new_tokens": 16}


def test_put_get_has_keys_records_round_trip(tmp_path: Path) -> None:
    with RunStore.open(tmp_path / "run", identity=IDENTITY) as store:
        assert store.keys("gen") == set() and store.records("gen") == [] and store.get("gen", "k1") is None
        records = {
            "k1": {"text": "Grüße, ☃", "n": 1, "nested": {"a": [1, 2.5, None, True]}},
            "k2": {"text": "", "n": 2, "nested": {}},
            "k3": {"text": 'line\nbreak "quoted"', "n": 3, "nested": {"z": "0"}},
        }
        for i, (key, record) in enumerate(records.items()):
            store.put("gen", key, record, example_id=f"ex{i}", seconds=0.5 * i)
        store.put("judge", "k1", {"verdict": "yes"})
        for key, record in records.items():
            assert store.get("gen", key) == record
            assert store.get("gen", key) is not None
        assert store.get("gen", "k4") is None and store.get("other", "k1") is None
        assert store.keys("gen") == set(records)
        assert store.keys("judge") == {"k1"}  # stages are separate key spaces
        assert store.get("judge", "k1") == {"verdict": "yes"}
        assert store.records("gen") == list(records.values())  # insertion order
        assert store.stages() == {"gen": 3, "judge": 1}
        units = list(store.iter_units("gen"))
        assert [u["key"] for u in units] == ["k1", "k2", "k3"]
        assert [u["example_id"] for u in units] == ["ex0", "ex1", "ex2"]
        assert [u["seconds"] for u in units] == [0.0, 0.5, 1.0]
        assert all(isinstance(u["created"], float) for u in units)
        assert [u["record"] for u in units] == list(records.values())
        assert len(list(store.iter_units())) == 4
        # Records are stored as JSON text, readable by any SQLite client (never pickle).
        raw = store._db.execute("SELECT record FROM units WHERE key='k1' AND stage='gen'").fetchone()[0]
        assert json.loads(raw) == records["k1"]


def test_put_same_key_replaces(tmp_path: Path) -> None:
    with RunStore.open(tmp_path) as store:
        store.put("s", "k", {"v": 1})
        store.put("s", "k", {"v": 2})
        assert store.get("s", "k") == {"v": 2}
        assert store.stages() == {"s": 1}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
            ),
            max_leaves=12,
        ),
        max_size=5,
    )
)
def test_any_json_record_round_trips(record: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp, RunStore.open(tmp) as store:
        store.put("s", "k", record)
        assert store.get("s", "k") == record
        assert store.records("s") == [record]


def test_put_is_committed_at_once(tmp_path: Path) -> None:
    """A row is visible to another connection and to another process right after put, store still open."""
    run = tmp_path / "run"
    store = RunStore.open(run, identity=IDENTITY)
    try:
        store.put("gen", "k1", {"text": "hello"}, example_id="e1")
        other = sqlite3.connect(run / DB_NAME)
        try:
            assert other.execute("SELECT key, record FROM units").fetchall() == [("k1", '{"text":"hello"}')]
        finally:
            other.close()
        script = (
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]);"
            "print(db.execute('SELECT COUNT(*), MAX(example_id) FROM units').fetchone())"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(run / DB_NAME)], capture_output=True, text=True, check=True
        ).stdout
        assert out.strip() == "(1, 'e1')"
        # And through the public API in a second store on the same directory.
        with RunStore.open_existing(run) as second:
            assert second.get("gen", "k1") == {"text": "hello"}
            store.put("gen", "k2", {"text": "again"})
            assert second.keys("gen") == {"k1", "k2"}
    finally:
        store.close()


def test_reopen_with_same_identity_keeps_units(tmp_path: Path) -> None:
    identity = {**IDENTITY, "sets": ("a", "b")}
    with RunStore.open(tmp_path / "run", identity=identity) as store:
        store.put("gen", "k", {"x": 1})
        created = store.get_meta("created")
    assert isinstance(created, float)
    # Key order and tuple-vs-list do not make a different identity.
    reordered = dict(reversed(list({**IDENTITY, "sets": ["a", "b"]}.items())))
    with RunStore.open(tmp_path / "run", identity=reordered) as store:
        assert store.get("gen", "k") == {"x": 1}
        assert store.identity == {**IDENTITY, "sets": ["a", "b"]}
        assert store.get_meta("created") == created  # identity and creation time are written once
    # Opening without an identity (e.g. a viewer) never rewrites it.
    with RunStore.open(tmp_path / "run") as store:
        assert store.identity == {**IDENTITY, "sets": ["a", "b"]}
    with RunStore.open(tmp_path / "other", identity=identity) as store:
        assert store.get("gen", "k") is None  # a different directory is a different run


def test_identity_mismatch_names_the_changed_fields(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with RunStore.open(run, identity=IDENTITY) as store:
        store.put("gen", "k", {"x": 1})
    with pytest.raises(UserError) as info:
        RunStore.open(run, identity={**IDENTITY, "seed": 1})
    message = str(info.value)
    assert "seed: stored 0, now 1" in message
    assert "model" not in message and "max_new_tokens" not in message  # unchanged fields are not listed
    assert str(run) in message and "another run directory" in message and "--" not in message  # API words
    with pytest.raises(UserError, match=r"max_new_tokens: stored 16, now 32.*seed: stored 0, now 2"):
        RunStore.open(run, identity={**IDENTITY, "seed": 2, "max_new_tokens": 32})
    with pytest.raises(UserError, match="limit: stored None, now 5"):  # an added field is a change too
        RunStore.open(run, identity={**IDENTITY, "limit": 5})
    with pytest.raises(UserError, match="seed: stored 0, now None"):  # and so is a dropped one
        RunStore.open(run, identity={k: v for k, v in IDENTITY.items() if k != "seed"})
    # The failed opens changed nothing.
    with RunStore.open(run, identity=IDENTITY) as store:
        assert store.identity == IDENTITY and store.get("gen", "k") == {"x": 1}


def test_info_may_change_between_invocations(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, identity=IDENTITY, info={"limit": 5, "batch_size": 8}) as store:
        assert store.get_meta("info") == {"limit": 5, "batch_size": 8, "robusteval_version": __version__}
        store.put("gen", "k", {"x": 1})
    with RunStore.open(tmp_path, identity=IDENTITY, info={"limit": 20, "batch_size": 1}) as store:
        assert store.get_meta("info") == {"limit": 20, "batch_size": 1, "robusteval_version": __version__}
        assert store.get("gen", "k") == {"x": 1}


def test_meta_round_trip(tmp_path: Path) -> None:
    with RunStore.open(tmp_path) as store:
        assert store.identity == {} and store.get_meta("nothing") is None
        store.set_meta("progress", {"done": [1, 2], "note": "ok"})
        store.set_meta("progress", {"done": [1, 2, 3]})
        assert store.get_meta("progress") == {"done": [1, 2, 3]}


def test_write_summary_is_atomic_json(tmp_path: Path) -> None:
    summary = {"model": "hf:/m", "n": 20, "acc": 0.25, "acc_ci95": [0.1, 0.5], "note": "Grüße"}
    with RunStore.open(tmp_path / "run") as store:
        path = store.write_summary(summary)
        assert path == tmp_path / "run" / SUMMARY_NAME
        assert json.loads(path.read_text(encoding="utf-8")) == summary
        assert store.get_meta("summary") == summary
        # A reader that opened the old summary keeps reading it whole: the new one replaces it by rename.
        with path.open(encoding="utf-8") as old_reader:
            old_inode = path.stat().st_ino
            store.write_summary({**summary, "n": 21})
            assert json.load(old_reader) == summary
        assert path.stat().st_ino != old_inode
        assert json.loads(path.read_text(encoding="utf-8"))["n"] == 21
        assert store.get_meta("summary")["n"] == 21
    leftovers = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert SUMMARY_NAME in leftovers and not [n for n in leftovers if n.endswith(".tmp")]


def test_open_existing_requires_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a robusteval run directory"):
        RunStore.open_existing(tmp_path)
    with pytest.raises(UserError, match="not a robusteval run directory"):
        RunStore.open_existing(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()  # looking did not create it
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UserError, match="not a robusteval run directory"):
        RunStore.open_existing(tmp_path / "afile")
    with RunStore.open(tmp_path / "run", identity=IDENTITY) as store:
        store.put("gen", "k", {"x": 1})
    with RunStore.open_existing(tmp_path / "run") as store:
        assert store.identity == IDENTITY and store.keys("gen") == {"k"}


def test_open_on_a_file_is_user_error(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("not a directory")
    with pytest.raises(UserError, match="not a directory"):
        RunStore.open(target)


def test_unit_key_is_stable() -> None:
    key = unit_key("answer_first", "hf:/m", "ex-1", "What is 2+2?", "prefix", 256)
    # Pinned: stored runs must keep resuming across versions.
    expected = hashlib.sha256(b'["answer_first","hf:/m","ex-1","What is 2+2?","prefix",256]').hexdigest()[:32]
    assert key == expected == "001f98947012cf246bb8ce90bdb60d27"
    assert len(key) == 32 and int(key, 16) >= 0
    assert unit_key({"b": 1, "a": [1, 2]}) == unit_key({"a": (1, 2), "b": 1})  # key order, tuple vs list
    assert unit_key("é") == hashlib.sha256('["é"]'.encode()).hexdigest()[:32]  # UTF-8, not \\u escapes
    assert unit_key("a", "b") != unit_key("ab") != unit_key(["a", "b"])
    assert unit_key(1) != unit_key("1") != unit_key(1.0)
    assert unit_key(None) != unit_key()


def test_file_sha256(tmp_path: Path) -> None:
    data = b"line 1\n" * 200_000  # more than one read chunk
    path = tmp_path / "data.jsonl"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
