"""The run store on a hostile disk and with a second process: damaged files, a full disk, a read-only medium,
two writers on one directory. Each fault is real: bytes overwritten in the file, a tmpfs that is genuinely
full, a read-only bind mount (root ignores chmod), a second OS process holding the lock.

Mounts happen in a private mount namespace (``unshare -m``) that vanishes with the driver process, so nothing
leaks to the machine; a small Python driver runs inside it and prints one JSON line with what happened.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import ENV
from robusteval import __version__
from robusteval.errors import UserError
from robusteval.store import DB_NAME, SUMMARY_NAME, RunLock, RunStore

IDENTITY = {"command": "eval", "model": "hf:/m", "seed": 0}
INFO = {"limit": 5}
SUMMARY = {"accuracy": 0.5, "n": 4}
PAD = "x" * 180  # records of a realistic size: a few hundred of them span dozens of pages


def _finished_run(run: Path, n: int = 300) -> Path:
    with RunStore.open(run, identity=IDENTITY, info=INFO) as store:
        for i in range(n):
            store.put("gen", f"k{i:04d}", {"i": i, "text": PAD}, example_id=f"ex{i}")
        store.write_summary(SUMMARY)
    return run


def _one_line(message: str) -> None:
    assert "\n" not in message and message.strip() == message


# ----------------------------------------------------------------------------------------------- damage
def _truncate(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def _garbage_mid_file(db: Path) -> None:
    """4 KiB of (seeded) random bytes over a page in the middle of the file: a b-tree page is destroyed."""
    with db.open("r+b") as handle:
        handle.seek(db.stat().st_size // 2 // 4096 * 4096)
        handle.write(random.Random(0).randbytes(4096))


def _header_overwritten(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.write(b"\0" * 100)


CORRUPTIONS = {"truncated": _truncate, "garbage-mid-file": _garbage_mid_file, "header": _header_overwritten}


@pytest.fixture(params=sorted(CORRUPTIONS))
def damaged_run(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    run = _finished_run(tmp_path / "run")
    assert not (run / f"{DB_NAME}-wal").exists()  # closed cleanly: every unit is in the main file
    CORRUPTIONS[request.param](run / DB_NAME)
    return run


def _assert_damaged(message: str, run: Path) -> None:
    _one_line(message)
    assert message.startswith(f"{run / DB_NAME} is damaged (")
    assert message.endswith("); move it aside to start the run over, or restore it from a backup")


def test_damaged_store_is_one_line_user_error_everywhere(damaged_run: Path) -> None:
    before = (damaged_run / DB_NAME).read_bytes()
    for attempt in (
        lambda: RunStore.open(damaged_run, identity=IDENTITY, info=INFO),
        lambda: RunStore.open(damaged_run, identity=IDENTITY, info=INFO),  # the failed open released its lock
        lambda: RunStore.open_existing(damaged_run),
        lambda: RunStore.check_resumable(damaged_run, IDENTITY),
    ):
        with pytest.raises(UserError) as info:
            attempt()
        _assert_damaged(str(info.value), damaged_run)
    assert (damaged_run / DB_NAME).read_bytes() == before  # nothing "repaired" or completed in a damaged file


def test_cli_on_damaged_store_says_so_in_one_line(tmp_path: Path) -> None:
    """``runs show`` and ``runs export`` on each damaged store: exit 2, one line, no traceback. The six CLI
    processes run side by side (each spends its time importing, not reading)."""
    runs = {}
    for name, corrupt in CORRUPTIONS.items():
        runs[name] = _finished_run(tmp_path / name)
        corrupt(runs[name] / DB_NAME)
    procs = {(name, command): subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", "runs", command,
                                                str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True, env=ENV)
             for name, run in runs.items() for command in ("show", "export")}
    for (name, command), proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 2, (name, command, stderr)
        assert "Traceback" not in stderr and stdout == ""
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("robusteval: error: "), (name, command, stderr)
        _assert_damaged(lines[0].removeprefix("robusteval: error: "), runs[name])


def test_garbage_json_in_a_record_is_reported_as_damage(tmp_path: Path) -> None:
    """Bytes that keep the b-tree valid (quick_check passes) but break a record are caught when read."""
    run = _finished_run(tmp_path / "run", n=3)
    db = sqlite3.connect(run / DB_NAME)
    db.execute("UPDATE units SET record = '{\"i\": 1, \"te' WHERE key = 'k0001'")
    db.execute("UPDATE units SET record = CAST(x'ff00fe' AS TEXT) WHERE key = 'k0002'")
    db.commit()
    db.close()
    with RunStore.open_existing(run) as store:
        assert store.get("gen", "k0000") == {"i": 0, "text": PAD}
        for key in ("k0001", "k0002"):
            with pytest.raises(UserError) as info:
                store.get("gen", key)
            _assert_damaged(str(info.value), run)
        with pytest.raises(UserError, match="is damaged"):
            store.records("gen")


# ------------------------------------------------------------------------- interrupted creation, leftovers
def test_store_from_an_interrupted_creation_is_completed_not_poisoned(tmp_path: Path) -> None:
    """Before atomic creation, a disk that filled while the store was made left a file without tables."""
    empty, half = tmp_path / "empty", tmp_path / "half"
    empty.mkdir()
    (empty / DB_NAME).write_bytes(b"")  # created, then the disk was full before the first page
    half.mkdir()
    db = sqlite3.connect(half / DB_NAME)
    db.execute("CREATE TABLE run (name TEXT PRIMARY KEY, value TEXT NOT NULL)")  # one table of two
    db.close()
    for run in (empty, half):
        RunStore.check_resumable(run, IDENTITY)  # nothing stored yet: resumable
        assert RunStore.stored_identity(run) is None
        with pytest.raises(UserError, match=r"holds no run yet \(results.sqlite is .*: nothing was stored\)"):
            RunStore.open_existing(run)
        with RunStore.open(run, identity=IDENTITY) as store:
            assert store.notes and "held no run" in store.notes[0]  # lifecycle puts it in run.log
            store.put("gen", "k", {"x": 1})
        with RunStore.open(run, identity=IDENTITY) as store:
            assert store.get("gen", "k") == {"x": 1} and store.identity == IDENTITY
        RunStore.check_resumable(run, IDENTITY)
        with RunStore.open_existing(run) as store:
            assert store.stages() == {"gen": 1}


def _sqlite_file(path: Path, *statements: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


RUN_TABLE = "CREATE TABLE run (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
FOREIGN_FILES = {
    "another program's table": ("CREATE TABLE notes (id INTEGER, body TEXT)", "INSERT INTO notes VALUES (1, 'mine')"),
    "units we cannot read": (RUN_TABLE, "CREATE TABLE units (stage TEXT, payload BLOB)",
                             "INSERT INTO units VALUES ('gen', x'00')"),
    "units without their run": ("CREATE TABLE units (stage TEXT NOT NULL, key TEXT NOT NULL, example_id TEXT, "
                                "record TEXT NOT NULL, seconds REAL, created REAL NOT NULL)",
                                "INSERT INTO units VALUES ('gen', 'k', NULL, '{}', 1.0, 0.0)"),
    "a view": ("CREATE VIEW answers AS SELECT 42 AS answer",),
}


@pytest.mark.parametrize("case", sorted(FOREIGN_FILES))
def test_a_foreign_file_is_refused_everywhere_and_never_written(tmp_path: Path, case: str) -> None:
    db = _sqlite_file(tmp_path / "run" / DB_NAME, *FOREIGN_FILES[case])
    before = db.read_bytes()
    for attempt in (
        lambda: RunStore.open(db.parent, identity=IDENTITY, info=INFO),
        lambda: RunStore.open_existing(db.parent),
        lambda: RunStore.check_resumable(db.parent, IDENTITY),
        lambda: RunStore.stored_identity(db.parent),
    ):
        with pytest.raises(UserError) as info:
            attempt()
        message = str(info.value)
        _one_line(message)
        assert message.startswith(f"{db} is not a robusteval run store (")
        assert message.endswith("); move that file elsewhere (nothing was written to it), or use another run "
                                "directory")
    assert db.read_bytes() == before  # our schema was not added to it
    assert {p.name for p in db.parent.iterdir()} <= {DB_NAME, ".lock"}


def test_lifecycle_classifies_before_the_model_loads(tmp_path: Path) -> None:
    """open_run: another program's file is refused before the (expensive) load; an empty one is re-created and
    run.log says so; an older robusteval's run is still refused with its own sentence."""
    from robusteval.lifecycle import LOG_NAME, open_run

    loads: list[str] = []
    foreign = _sqlite_file(tmp_path / "foreign" / DB_NAME, *FOREIGN_FILES["another program's table"])
    with pytest.raises(UserError, match="is not a robusteval run store"), open_run(
            foreign.parent, IDENTITY, load=lambda: loads.append("loaded")):
        pass
    assert loads == []
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / DB_NAME).write_bytes(b"")
    with open_run(empty, IDENTITY, load=lambda: loads.append("loaded")) as (store, _):
        store.put("gen", "k", {"x": 1})
    assert loads == ["loaded"]
    assert "held no run (a 0-byte file); created a new store" in (empty / LOG_NAME).read_text(encoding="utf-8")
    with RunStore.open(tmp_path / "old", identity={"command": "eval", "model": "hf:/m"}):
        pass
    with pytest.raises(UserError, match=r"made by robusteval 0\.1"), open_run(tmp_path / "old", IDENTITY):
        pass


def test_a_run_with_a_table_of_the_users_beside_it_stays_a_run(tmp_path: Path) -> None:
    """A user's own table added to a real store (an analysis) does not make it foreign."""
    run = _finished_run(tmp_path / "run", n=2)
    _sqlite_file(run / DB_NAME, "CREATE TABLE my_notes (text TEXT)", "INSERT INTO my_notes VALUES ('hi')")
    with RunStore.open(run, identity=IDENTITY, info=INFO) as store:
        assert store.notes == [] and len(store.keys("gen")) == 2


def test_new_store_appears_whole_and_leftover_temp_files_are_removed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    leftovers = [f".{DB_NAME}.tmp-999999", f".{DB_NAME}.tmp-999999-journal", f".{SUMMARY_NAME}.tmp-999999"]
    for name in leftovers:
        (run / name).write_bytes(b"half a file from a killed run")
    with RunStore.open(run, identity=IDENTITY) as store:
        store.put("gen", "k", {"x": 1})
        assert not [p.name for p in run.iterdir() if ".tmp-" in p.name]
        assert store.get("gen", "k") == {"x": 1}
        assert store._sql("PRAGMA journal_mode") == [("wal",)]


# -------------------------------------------------------------------------------------- writes nothing
def test_reopening_a_finished_run_with_the_same_settings_writes_nothing(tmp_path: Path) -> None:
    run = _finished_run(tmp_path / "run", n=5)
    files = {name: (run / name) for name in (DB_NAME, SUMMARY_NAME)}
    before = {name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for name, p in files.items()}
    RunStore.check_resumable(run, IDENTITY)
    with RunStore.open(run, identity=IDENTITY, info=INFO) as store:
        assert len(store.keys("gen")) == 5
        assert store.get_meta("info") == {**INFO, "robusteval_version": __version__}
        store.set_meta("summary", SUMMARY)
        assert store.write_summary(SUMMARY) == files[SUMMARY_NAME]
        assert (run / f"{DB_NAME}-wal").stat().st_size == 0  # not one transaction (a close may hide it)
    with RunStore.open_existing(run) as store:
        assert store.get_meta("summary") == SUMMARY
    after = {name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for name, p in files.items()}
    assert after == before
    assert sorted(p.name for p in run.iterdir()) == [".lock", DB_NAME, SUMMARY_NAME]  # no -wal/-shm left


# ------------------------------------------------------------------------------------------ namespaces
_DRIVER_HEAD = """
import json, os, subprocess, sys
from pathlib import Path
from robusteval.errors import UserError
from robusteval.store import RunLock, RunStore
IDENTITY, INFO, SUMMARY, PAD = {identity!r}, {info!r}, {summary!r}, {pad!r}
D = Path(sys.argv[1])
out = {{}}

def attempt(name, action):
    try:
        return action()
    except UserError as exc:
        out[name] = str(exc)
    except Exception as exc:  # a raw error is what the test must never see
        out[name] = "RAW " + type(exc).__name__ + ": " + str(exc)

def remount_bigger():
    subprocess.run(["mount", "-o", "remount,size=10m", str(D)], check=True)
"""


def _in_namespace(tmp_path: Path, mount: str, body: str, target: Path) -> dict[str, Any]:
    """Run ``body`` (Python) in a private mount namespace after ``mount`` (sh, ``$1`` = ``target``)."""
    head = _DRIVER_HEAD.format(identity=IDENTITY, info=INFO, summary=SUMMARY, pad=PAD)
    driver = tmp_path / "driver.py"
    driver.write_text(head + textwrap.dedent(body) + "\nprint(json.dumps(out))\n", encoding="utf-8")
    result = subprocess.run(["unshare", "-m", "sh", "-c", f'{mount} && exec "$2" "$3" "$1"', "sh", str(target),
                             sys.executable, str(driver)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def _disk_full_message(where: Path) -> str:
    return (f"no space left on the device holding {where}; free space and re-run the same command to resume "
            "(stored units are kept)")


def test_full_disk_keeps_every_committed_unit(namespace: None, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = _in_namespace(tmp_path, 'mount -t tmpfs -o size=256k tmpfs "$1"', """
        run = D / "run"
        store = RunStore.open(run, identity=IDENTITY, info=INFO)
        committed = []
        def fill():
            for i in range(100_000):
                store.put("gen", f"k{i}", {"i": i, "text": PAD * 5})
                committed.append(f"k{i}")
        attempt("put_error", fill)
        out["committed"] = committed
        attempt("summary_error", lambda: store.write_summary({**SUMMARY, "pad": PAD * 300}))
        store.close()
        out["leftovers"] = sorted(p.name for p in run.iterdir() if ".tmp-" in p.name)
        remount_bigger()
        with RunStore.open(run, identity=IDENTITY, info=INFO) as store:
            out["stored"] = sorted(store.keys("gen"))
            out["intact"] = all(store.get("gen", k) == {"i": int(k[1:]), "text": PAD * 5} for k in committed)
            store.put("gen", "after", {"i": -1})
            # Only summary.json left to write (the database copy is already there): ENOSPC from the file.
            big = {**SUMMARY, "pad": PAD * 300}
            store.set_meta("summary", big)
            filler = D / "filler"
            with filler.open("wb", buffering=0) as handle:
                try:
                    while True:
                        handle.write(b"\\0" * 4096)
                except OSError:
                    pass
            attempt("summary_file_error", lambda: store.write_summary(big))
            out["leftovers"] += sorted(p.name for p in run.iterdir() if ".tmp-" in p.name)
            filler.unlink()
            store.write_summary(big)
        with RunStore.open_existing(run) as store:
            out["final"] = len(store.keys("gen"))
    """, mnt)
    run = mnt / "run"
    assert out["put_error"] == _disk_full_message(run)
    assert out["summary_error"] == out["summary_file_error"] == _disk_full_message(run)
    assert len(out["committed"]) >= 5  # the disk held a few units before it filled
    assert out["stored"] == sorted(out["committed"]) and out["intact"]  # every committed unit, nothing half
    assert out["leftovers"] == []  # the summary that did not fit left no temp file
    assert out["final"] == len(out["committed"]) + 1


def test_disk_full_while_creating_the_store_leaves_no_poisoned_file(namespace: None, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = _in_namespace(tmp_path, 'mount -t tmpfs -o size=64k tmpfs "$1"', """
        run = D / "run"
        filler = D / "filler"
        with filler.open("wb", buffering=0) as handle:  # fill the disk, then free two pages: room for .lock
            try:
                while True:
                    handle.write(b"\\0" * 4096)
            except OSError:
                pass
        os.truncate(filler, filler.stat().st_size - 8192)
        attempt("open_error", lambda: RunStore.open(run, identity=IDENTITY, info=INFO))
        out["after_failure"] = sorted(p.name for p in run.iterdir())
        RunStore.check_resumable(run, IDENTITY)
        remount_bigger()
        RunStore.check_resumable(run, IDENTITY)
        with RunStore.open(run, identity=IDENTITY, info=INFO) as store:
            store.put("gen", "k", {"x": 1})
        with RunStore.open_existing(run) as store:
            out["units"] = store.stages()
    """, mnt)
    assert out["open_error"] == _disk_full_message(mnt / "run")
    assert out["after_failure"] == [".lock"]  # no results.sqlite without tables, no temp file
    assert out["units"] == {"gen": 1}


def _killed_writer(run: Path) -> None:
    """A writer that dies without closing: its last units are only in the -wal file."""
    script = ("import os, sys; from robusteval.store import RunStore\n"
              "s = RunStore.open(sys.argv[1], identity=dict(command='eval', model='hf:/m', seed=0))\n"
              "[s.put('gen', f'k{i}', {'i': i}) for i in range(3)]\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(run)], check=True, timeout=30)
    assert (run / f"{DB_NAME}-wal").stat().st_size > 0


def test_finished_run_on_a_read_only_medium(namespace: None, tmp_path: Path) -> None:
    medium = tmp_path / "medium"
    _finished_run(medium / "run", n=5)
    _killed_writer(medium / "killed")
    before = {p.name: p.read_bytes() for p in (medium / "run").iterdir()}
    out = _in_namespace(tmp_path, 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"', """
        run = D / "run"
        lock = RunLock.acquire(run)
        out["lock_held"] = lock.held  # nobody can write here: no lock needed, and no failure
        RunStore.check_resumable(run, IDENTITY)
        with RunStore.open(run, identity=IDENTITY, info=INFO, lock=lock) as store:
            out["read_only"] = store.read_only
            out["keys"] = len(store.keys("gen"))
            out["summary_path"] = str(store.write_summary(SUMMARY))  # same content: nothing to write
            attempt("put_error", lambda: store.put("gen", "new", {"x": 1}))
            attempt("summary_error", lambda: store.write_summary({**SUMMARY, "n": 5}))
        lock.release()
        with RunStore.open(run, identity=IDENTITY, info=INFO) as store:  # no lock passed, none taken
            out["reopened"] = store.stages()
        attempt("changed_info_error", lambda: RunStore.open(run, identity=IDENTITY, info={"limit": 9}))
        attempt("new_run_error", lambda: RunStore.open(D / "new", identity=IDENTITY))
        with RunStore.open_existing(run) as store:
            out["existing"] = store.stages()
        with RunStore.open_existing(D / "killed") as store:  # the -wal holds its units: not ignored
            out["killed"] = sorted(store.keys("gen"))
    """, medium)
    run = medium / "run"
    read_only = (f"cannot write to {run} (read-only or no permission); use another run directory or make it "
                 "writable")
    assert out["lock_held"] is False and out["read_only"] is True
    assert out["keys"] == 5 and out["reopened"] == out["existing"] == {"gen": 5}
    assert out["summary_path"] == str(run / SUMMARY_NAME)
    assert out["put_error"] == out["summary_error"] == out["changed_info_error"] == read_only
    assert out["new_run_error"] == read_only.replace(str(run), str(medium / "new"))
    assert out["killed"] == ["k0", "k1", "k2"]
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


# ------------------------------------------------------------------------------------------------ lock
_HOLDER = """
import sys, time
from robusteval.store import RunStore
store = RunStore.open(sys.argv[1], identity={"command": "eval", "model": "hf:/m", "seed": 0})
store.put("gen", "held", {"x": 1})
print("ready", flush=True)
time.sleep(120)
"""


def test_second_process_is_refused_and_a_killed_holder_is_taken_over(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        expected = (f"{run} is in use by another robusteval process (PID {holder.pid}); wait for it to finish "
                    "or use another run directory")
        with pytest.raises(UserError) as info:
            RunStore.open(run, identity=IDENTITY)
        assert str(info.value) == expected
        with pytest.raises(UserError) as info:
            RunLock.acquire(run)
        assert str(info.value) == expected
        # Readers neither wait for nor take the lock.
        RunStore.check_resumable(run, IDENTITY)
        with RunStore.open_existing(run) as store:
            assert store.get("gen", "held") == {"x": 1}
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert (run / ".lock").read_text() == f"{holder.pid}\n"  # the dead holder's file is still there
    with RunStore.open(run, identity=IDENTITY) as store:  # ... and taken over
        assert (run / ".lock").read_text() == f"{os.getpid()}\n"
        assert store.get("gen", "held") == {"x": 1}
        store.put("gen", "mine", {"x": 2})
    with RunStore.open(run, identity=IDENTITY) as store:  # close() released it
        assert store.keys("gen") == {"held", "mine"}


def test_lock_taken_early_is_handed_to_the_store(tmp_path: Path) -> None:
    run = tmp_path / "new" / "run"
    with RunLock.acquire(run) as lock:  # before the (expensive) model load; creates the directory
        assert lock.held and (run / ".lock").read_text() == f"{os.getpid()}\n"
        RunStore.check_resumable(run, IDENTITY)
        with RunStore.open(run, identity=IDENTITY, lock=lock) as store:
            store.put("gen", "k", {"x": 1})
        assert lock.held  # the store does not release a lock it was given
        with pytest.raises(UserError, match="already open for writing in this process"):
            RunStore.open(run, identity=IDENTITY)
        with pytest.raises(ValueError, match="does not lock"):
            RunStore.open(tmp_path / "elsewhere", lock=lock)
    assert not lock.held
    with RunStore.open(run, identity=IDENTITY) as store:
        assert store.get("gen", "k") == {"x": 1}


def test_database_locked_by_another_program_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program other than robusteval (no .lock) holding SQLite's write lock: said so once the wait is over."""
    monkeypatch.setattr("robusteval.store.sqlite._TIMEOUT_S", 0.05)
    run = tmp_path / "run"
    with RunStore.open(run, identity=IDENTITY) as store:
        other = sqlite3.connect(run / DB_NAME, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # e.g. a SQLite browser in the middle of an edit
            with pytest.raises(UserError) as info:
                store.put("gen", "k", {"x": 1})
            assert str(info.value) == (f"{run / DB_NAME} is locked by another program; wait for it to finish (or "
                                       "close it) and re-run the same command")
            other.execute("ROLLBACK")
        finally:
            other.close()
        store.put("gen", "k", {"x": 1})
        assert store.get("gen", "k") == {"x": 1}
