"""One run directory = one SQLite file of units of work + a summary.json.

Every expensive step (a generation, a judge verdict, an attacked example) is a *unit* with a deterministic
key; it is committed as soon as it finishes. Re-running the same command skips stored keys, so a killed run
loses at most the unit in flight, and the same keys make caches of judge and API calls free.
Records are JSON (never pickle): a run directory is safe to share and to read with any SQLite client.

A hostile disk is expected: a new store is built in a temporary file and renamed into place (a disk that fills
meanwhile leaves nothing behind), an existing one is checked (``PRAGMA quick_check``) and classified
(:mod:`robusteval.store.classify`: a file that holds no run is re-created, another program's is refused and
never written) before it is read, one
writer at a time holds the directory's :class:`~robusteval.store.lock.RunLock`, a finished run is opened
without writing anything (so it reads fine from a read-only medium), and every SQLite or OS error a user can
act on becomes one line (:mod:`robusteval.store.faults`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from robusteval._version import __version__
from robusteval.errors import UserError
from robusteval.store.classify import StoreKind, StoreState, classify
from robusteval.store.faults import SQLITE_CANTOPEN, damaged_error, foreign_error, read_only_error, translated
from robusteval.store.files import write_text_atomic
from robusteval.store.lock import RunLock
from robusteval.store.measured import keep_measurements

DB_NAME = "results.sqlite"
SUMMARY_NAME = "summary.json"
_TIMEOUT_S = 30.0  # wait this long for another program's SQLite lock before saying so

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    stage TEXT NOT NULL,
    key TEXT NOT NULL,
    example_id TEXT,
    record TEXT NOT NULL,
    seconds REAL,
    created REAL NOT NULL,
    PRIMARY KEY (stage, key)
);
"""


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def unit_key(*parts: Any) -> str:
    """A stable key for a unit of work from anything JSON-serialisable."""
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()[:32]


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _differences(stored: Any, fresh: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted field, stored, now) for every differing leaf: ``model.dtype`` rather than the whole model."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        out = []
        for key in sorted(set(stored) | set(fresh)):
            out += _differences(stored.get(key), fresh.get(key), f"{prefix}{key}.")
        return out
    return [] if stored == fresh else [(prefix.rstrip("."), stored, fresh)]


class RunStore:
    """The results of one run. Open with :meth:`open` (to write) or :meth:`open_existing` (to read).

    Identity fields guard against mixing runs. ``read_only`` is True when the directory or database cannot be
    written (e.g. a finished run on a read-only medium): reading works, a write raises a one-line UserError.
    """

    def __init__(self, run_dir: Path, connection: sqlite3.Connection, *, read_only: bool = False,
                 own_lock: RunLock | None = None):
        self.run_dir = run_dir
        self.db_path = run_dir / DB_NAME
        self.read_only = read_only
        self._db = connection
        self._own_lock = own_lock  # acquired by open() itself, so released by close()
        #: What opening did that a user should hear of (a store that held no run, re-created); run.log gets it.
        self.notes: list[str] = []

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike[str],
        identity: dict[str, Any] | None = None,
        info: dict[str, Any] | None = None,
        lock: RunLock | None = None,
    ) -> RunStore:
        """Open or create ``run_dir`` for writing.

        ``identity`` holds what makes results comparable (model, data hash, seed, hyper-parameters): reopening
        a directory with different identity stops with an error naming the fields, instead of silently mixing
        two runs. ``info`` is stored too but may change between invocations (limit, batch size); it is only
        rewritten when it changed, so reopening a finished run with the same settings writes nothing.

        An existing ``results.sqlite`` that holds no run (:mod:`robusteval.store.classify`) is re-created in
        place and :attr:`notes` says so; another program's file is refused, naming it, and left as it was.

        ``lock``: a :class:`RunLock` on ``run_dir`` taken earlier (before an expensive model load); its owner
        releases it, after closing the store. Without one, the store takes the lock itself (failing at once
        when another process holds it) and :meth:`close` releases it.
        """
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise UserError(f"run directory {path}: exists and is not a directory")
        if lock is not None and lock.run_dir.resolve() != path.resolve():
            raise ValueError(f"{lock!r} does not lock {path}")
        own_lock: RunLock | None = None
        if lock is None:
            lock = own_lock = RunLock.acquire(path)  # creates the directory
        db_path = path / DB_NAME
        store: RunStore | None = None
        try:
            with translated(path, db_path):
                writable = _writable(path, db_path)
                if writable:
                    if lock.held:  # nobody else is creating a store here: leftovers are from killed runs
                        _remove_leftovers(path)
                    if not db_path.exists():
                        _create(db_path)
                elif not db_path.exists():
                    raise read_only_error(path)
                store = cls(path, _connect(db_path, writable=writable), read_only=not writable, own_lock=own_lock)
            state = store._state()
            if state.kind is StoreKind.EMPTY:
                if not writable:
                    raise read_only_error(path)  # re-creating it needs a write
                store._recreate(state)
            elif writable and store._sql("PRAGMA journal_mode")[0][0] != "wal":
                store._sql("PRAGMA journal_mode=WAL")  # persistent: only ever written once
            if identity is not None:
                store._check_identity(identity)
            store.set_meta("info", {**(info or {}), "robusteval_version": __version__})
        except BaseException:
            if store is not None:
                store.close()
            elif own_lock is not None:
                own_lock.release()
            raise
        return store

    @classmethod
    def check_resumable(cls, run_dir: str | os.PathLike[str], identity: dict[str, Any]) -> None:
        """Raise the identity, foreign-file or damage error now, before an expensive model load; writes
        nothing. A store that holds no run yet is resumable: :meth:`open` re-creates it."""
        if cls.stored_identity(run_dir) is not None:
            with cls._open_reader(Path(run_dir)) as store:
                store._check_identity(identity)

    @classmethod
    def stored_identity(cls, run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The identity stored in ``run_dir``; None when it holds no run yet (no store, an empty one, or one
        whose run never got an identity). A foreign or damaged file raises its one-line error. Writes nothing."""
        path = Path(run_dir)
        if not (path / DB_NAME).is_file():
            return None
        with cls._open_reader(path) as store:
            if store._state().kind is StoreKind.EMPTY:
                return None
            stored = store.get_meta("identity")
        return stored if isinstance(stored, dict) else None

    @classmethod
    def open_existing(cls, run_dir: str | os.PathLike[str]) -> RunStore:
        """Open a run directory to read it: no lock, no writes (it may be another process's running run)."""
        path = Path(run_dir)
        if not (path / DB_NAME).is_file():
            raise UserError(f"{path}: not a robusteval run directory (no {DB_NAME})")
        store = cls._open_reader(path)
        try:
            state = store._state()
            if state.kind is StoreKind.EMPTY:
                raise UserError(f"{path} holds no run yet ({DB_NAME} is {state.detail}: nothing was stored); "
                                "a run started in this directory re-creates it")
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_reader(cls, path: Path) -> RunStore:
        db_path = path / DB_NAME
        with translated(path, db_path):
            return cls(path, _connect(db_path, writable=_writable(path, db_path), reader=True), read_only=True)

    def _state(self) -> StoreState:
        """What the file holds (:mod:`robusteval.store.classify`); a foreign one is refused here, for everyone."""
        state = classify(self._db, self.run_dir, self.db_path)
        if state.kind is StoreKind.FOREIGN:
            raise foreign_error(self.db_path, state.detail)
        return state

    def _recreate(self, state: StoreState) -> None:
        """Replace a store that holds no run (nothing can be lost) by a new one, and note it for run.log."""
        self._db.close()
        with translated(self.run_dir, self.db_path):
            for suffix in ("-wal", "-shm", "-journal"):
                self.db_path.with_name(self.db_path.name + suffix).unlink(missing_ok=True)
            _create(self.db_path)  # renamed over the old file: atomic
            self._db = _connect(self.db_path, writable=True)
        self.notes.append(f"{self.db_path} held no run ({state.detail}); created a new store in its place")

    def _check_identity(self, identity: dict[str, Any]) -> None:
        """Write ``identity`` on first use; afterwards refuse a different one, naming the fields."""
        stored = self.get_meta("identity")
        fresh = json.loads(canonical_json(identity))
        if stored is None:
            self.set_meta("identity", fresh)
            self.set_meta("created", time.time())
            return
        changed = _differences(stored, fresh)
        if changed:
            detail = "; ".join(f"{k}: stored {old!r}, now {new!r}" for k, old, new in changed[:4])
            raise UserError(
                f"{self.run_dir} holds a different run ({detail}). Use another run directory to start a "
                "new run, or repeat the original settings to resume it."
            )

    def close(self) -> None:
        """Close the database, then release the lock if :meth:`open` took it (idempotent)."""
        try:
            self._db.close()
        finally:
            lock, self._own_lock = self._own_lock, None
            if lock is not None:
                lock.release()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- SQL
    def _sql(self, query: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """Every statement goes through here: rows fetched at once, errors translated to one line."""
        with translated(self.run_dir, self.db_path):
            return self._db.execute(query, args).fetchall()

    def _load(self, text: str) -> Any:
        try:
            return json.loads(text)
        except (TypeError, ValueError) as exc:  # garbage in a record that passed quick_check
            raise damaged_error(self.db_path, f"unreadable stored JSON: {exc}") from None

    # ----------------------------------------------------------------- metadata
    def set_meta(self, name: str, value: Any) -> None:
        """Store ``value`` under ``name``; nothing is written when the same value is already stored, or one that
        differs only in what the writing invocation measured (:mod:`robusteval.store.measured`)."""
        value = keep_measurements(self.get_meta(name), value)
        text = canonical_json(value)
        if self._sql("SELECT 1 FROM run WHERE name=? AND value=?", (name, text)):
            return
        self._sql(
            "INSERT INTO run(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value=excluded.value",
            (name, text),
        )

    def get_meta(self, name: str) -> Any:
        rows = self._sql("SELECT value FROM run WHERE name=?", (name,))
        return None if not rows else self._load(rows[0][0])

    @property
    def identity(self) -> dict[str, Any]:
        return self.get_meta("identity") or {}

    # ----------------------------------------------------------------- units
    def get(self, stage: str, key: str) -> dict[str, Any] | None:
        rows = self._sql("SELECT record FROM units WHERE stage=? AND key=?", (stage, key))
        return None if not rows else self._load(rows[0][0])

    def keys(self, stage: str) -> set[str]:
        return {row[0] for row in self._sql("SELECT key FROM units WHERE stage=?", (stage,))}

    def put(
        self,
        stage: str,
        key: str,
        record: dict[str, Any],
        example_id: str | None = None,
        seconds: float | None = None,
        created: float | None = None,
    ) -> None:
        """Store one finished unit and commit at once (autocommit): a kill after this loses nothing, and a
        failure while writing it (a full disk) leaves every earlier unit intact. ``created`` keeps the time of
        a unit copied from another run (default: now). Storing a record identical to the stored one writes
        nothing (a finished run re-run, even on read-only media, rewrites no derived rows)."""
        text = canonical_json(record)
        stored = self._sql("SELECT record FROM units WHERE stage=? AND key=?", (stage, key))
        if stored and stored[0][0] == text:
            return
        self._sql(
            "INSERT OR REPLACE INTO units(stage, key, example_id, record, seconds, created) VALUES(?,?,?,?,?,?)",
            (stage, key, example_id, text, seconds, time.time() if created is None else created),
        )

    def records(self, stage: str) -> list[dict[str, Any]]:
        rows = self._sql("SELECT record FROM units WHERE stage=? ORDER BY rowid", (stage,))
        return [self._load(row[0]) for row in rows]

    def stages(self) -> dict[str, int]:
        rows = self._sql("SELECT stage, COUNT(*) FROM units GROUP BY stage ORDER BY stage")
        return {stage: count for stage, count in rows}

    def iter_units(self, stage: str | None = None) -> Iterator[dict[str, Any]]:
        query = "SELECT stage, key, example_id, record, seconds, created FROM units"
        args: tuple[str, ...] = ()
        if stage is not None:
            query += " WHERE stage=?"
            args = (stage,)
        for st, key, example_id, record, seconds, created in self._sql(query + " ORDER BY rowid", args):
            yield {
                "stage": st,
                "key": key,
                "example_id": example_id,
                "seconds": seconds,
                "created": created,
                "record": self._load(record),
            }

    # ----------------------------------------------------------------- summary
    def write_summary(self, summary: dict[str, Any]) -> Path:
        """Write summary.json atomically (temp file + rename) and keep a copy in the database.

        Each is written only when it differs from what is there, so re-summarising a finished run on a
        read-only medium works.
        """
        summary = keep_measurements(self.get_meta("summary"), summary)
        self.set_meta("summary", summary)
        target = self.run_dir / SUMMARY_NAME
        text = json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n"
        try:
            current: str | None = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text and not _same_json(current, text):  # key order alone is no difference to write
            with translated(self.run_dir, self.db_path):
                write_text_atomic(target, text)
        return target


def _same_json(current: str | None, text: str) -> bool:
    """Whether the file's text holds the same JSON value as ``text`` (a stored value read back from the database
    comes with its keys sorted)."""
    if current is None:
        return False
    try:
        return bool(json.loads(current) == json.loads(text))
    except ValueError:
        return False


def _writable(run_dir: Path, db_path: Path) -> bool:
    """Can we create files in ``run_dir`` (-wal, -shm, temp files) and write the database?"""
    if not os.access(run_dir, os.W_OK | os.X_OK):
        return False
    return not db_path.exists() or os.access(db_path, os.R_OK | os.W_OK)


def _temp_name(db_path: Path, pid: int | str) -> Path:
    return db_path.with_name(f".{db_path.name}.tmp-{pid}")


def _remove_leftovers(run_dir: Path) -> None:
    """Temporary files of killed runs (a store being created, a summary being written, with their journals)."""
    for pattern in (f".{DB_NAME}.tmp-*", f".{SUMMARY_NAME}.tmp-*"):
        for leftover in run_dir.glob(pattern):
            leftover.unlink(missing_ok=True)


def _create(db_path: Path) -> None:
    """Build an empty store beside ``db_path`` and rename it into place: the file appears complete or not at
    all, so a disk that fills (or a kill) during creation cannot leave a store without tables."""
    tmp = _temp_name(db_path, os.getpid())
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            # Rollback-journal mode while building: the commit lands in the file itself, not in a -wal that
            # the rename would leave behind. WAL is then switched on (persistent in the header; should that
            # fail silently, the first open switches it on).
            db.executescript("BEGIN;" + _SCHEMA + "COMMIT;")
            db.execute("PRAGMA journal_mode=WAL").fetchall()
        finally:
            db.close()
        os.replace(tmp, db_path)
    except BaseException:
        for leftover in db_path.parent.glob(tmp.name + "*"):
            leftover.unlink(missing_ok=True)
        raise


def _connect(db_path: Path, *, writable: bool, reader: bool = False) -> sqlite3.Connection:
    """A connection that never creates the file.

    ``reader`` on a writable directory: read-write at the file level but ``query_only``, so that closing it
    removes the -wal/-shm files like any writer's close (a ``mode=ro`` connection would leave them behind).
    Not writable: ``mode=ro``, falling back to ``immutable=1`` when not even the -wal/-shm files of a WAL
    database can be created (a read-only medium).
    """
    uri = "file:" + quote(str(db_path.absolute()))
    if writable:
        db = sqlite3.connect(uri + "?mode=rw", uri=True, timeout=_TIMEOUT_S, isolation_level=None)
        db.execute("PRAGMA query_only=1" if reader else "PRAGMA synchronous=NORMAL")  # per connection
        return db
    db = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=_TIMEOUT_S, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the file now
    except sqlite3.OperationalError as exc:
        db.close()
        if (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF != SQLITE_CANTOPEN:
            raise
        # Nothing can change the file while nobody can write here, which is what immutable promises.
        db = sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, timeout=_TIMEOUT_S, isolation_level=None)
    return db
