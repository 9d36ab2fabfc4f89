"""One run directory = one SQLite file of units of work + a summary.json.

Every expensive step (a generation, a judge verdict, an attacked example) is a *unit* with a deterministic
key; it is committed as soon as it finishes. Re-running the same command skips stored keys, so a killed run
loses at most the unit in flight, and the same keys make caches of judge and API calls free.
Records are JSON (never pickle): a run directory is safe to share and to read with any SQLite client.
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

from robusteval import __version__
from robusteval.errors import UserError
from robusteval.store.files import write_text_atomic

DB_NAME = "results.sqlite"
SUMMARY_NAME = "summary.json"

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


class RunStore:
    """The results of one run. Open with :meth:`open`; identity fields guard against mixing runs."""

    def __init__(self, run_dir: Path, connection: sqlite3.Connection):
        self.run_dir = run_dir
        self._db = connection

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike[str],
        identity: dict[str, Any] | None = None,
        info: dict[str, Any] | None = None,
    ) -> RunStore:
        """Open or create ``run_dir``.

        ``identity`` holds what makes results comparable (model, data hash, seed, hyper-parameters): reopening
        a directory with different identity stops with an error naming the fields, instead of silently mixing
        two runs. ``info`` is stored too but may change between invocations (limit, batch size).
        """
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise UserError(f"--out {path}: exists and is not a directory")
        path.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path / DB_NAME, timeout=30.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        store = cls(path, db)
        try:
            if identity is not None:
                store._check_identity(identity)
            store.set_meta("info", {**(info or {}), "robusteval_version": __version__})
        except BaseException:
            db.close()
            raise
        return store

    @classmethod
    def check_resumable(cls, run_dir: str | os.PathLike[str], identity: dict[str, Any]) -> None:
        """Raise the identity error now, before an expensive model load, without creating anything."""
        path = Path(run_dir)
        if not (path / DB_NAME).is_file():
            return
        with cls.open_existing(path) as store:
            stored = store.get_meta("identity")
            if stored is not None:
                store._check_identity(identity)

    @classmethod
    def open_existing(cls, run_dir: str | os.PathLike[str]) -> RunStore:
        path = Path(run_dir)
        if not (path / DB_NAME).is_file():
            raise UserError(f"{path}: not a robusteval run directory (no {DB_NAME})")
        db = sqlite3.connect(path / DB_NAME, timeout=30.0, isolation_level=None)
        return cls(path, db)

    def _check_identity(self, identity: dict[str, Any]) -> None:
        """Write ``identity`` on first use; afterwards refuse a different one, naming the fields."""
        stored = self.get_meta("identity")
        fresh = json.loads(canonical_json(identity))
        if stored is None:
            self.set_meta("identity", fresh)
            self.set_meta("created", time.time())
            return
        changed = sorted(k for k in set(stored) | set(fresh) if stored.get(k) != fresh.get(k))
        if changed:
            detail = "; ".join(f"{k}: stored {stored.get(k)!r}, now {fresh.get(k)!r}" for k in changed[:4])
            raise UserError(
                f"{self.run_dir} holds a different run ({detail}). Use another --out directory to start a "
                "new run, or repeat the original settings to resume it."
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- metadata
    def set_meta(self, name: str, value: Any) -> None:
        self._db.execute(
            "INSERT INTO run(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value=excluded.value",
            (name, canonical_json(value)),
        )

    def get_meta(self, name: str) -> Any:
        row = self._db.execute("SELECT value FROM run WHERE name=?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    @property
    def identity(self) -> dict[str, Any]:
        return self.get_meta("identity") or {}

    # ----------------------------------------------------------------- units
    def get(self, stage: str, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT record FROM units WHERE stage=? AND key=?", (stage, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def has(self, stage: str, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM units WHERE stage=? AND key=?", (stage, key)).fetchone() is not None

    def keys(self, stage: str) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT key FROM units WHERE stage=?", (stage,))}

    def put(
        self,
        stage: str,
        key: str,
        record: dict[str, Any],
        example_id: str | None = None,
        seconds: float | None = None,
    ) -> None:
        """Store one finished unit and commit at once (autocommit): a kill after this loses nothing."""
        self._db.execute(
            "INSERT OR REPLACE INTO units(stage, key, example_id, record, seconds, created) VALUES(?,?,?,?,?,?)",
            (stage, key, example_id, canonical_json(record), seconds, time.time()),
        )

    def records(self, stage: str) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT record FROM units WHERE stage=? ORDER BY rowid", (stage,))
        return [json.loads(row[0]) for row in rows]

    def stages(self) -> dict[str, int]:
        rows = self._db.execute("SELECT stage, COUNT(*) FROM units GROUP BY stage ORDER BY stage")
        return {stage: count for stage, count in rows}

    def iter_units(self, stage: str | None = None) -> Iterator[dict[str, Any]]:
        query = "SELECT stage, key, example_id, record, seconds, created FROM units"
        args: tuple[str, ...] = ()
        if stage is not None:
            query += " WHERE stage=?"
            args = (stage,)
        for st, key, example_id, record, seconds, created in self._db.execute(query + " ORDER BY rowid", args):
            yield {
                "stage": st,
                "key": key,
                "example_id": example_id,
                "seconds": seconds,
                "created": created,
                "record": json.loads(record),
            }

    # ----------------------------------------------------------------- summary
    def write_summary(self, summary: dict[str, Any]) -> Path:
        """Write summary.json atomically (temp file + rename) and keep a copy in the database."""
        self.set_meta("summary", summary)
        return write_text_atomic(
            self.run_dir / SUMMARY_NAME, json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n"
        )
