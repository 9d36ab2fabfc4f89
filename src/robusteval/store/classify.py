"""What a ``results.sqlite`` holds, decided once, for every way a store is opened.

* ``COMPLETE``: our two tables with our columns (a run, possibly with no unit yet). Other tables beside them
  (a user's own analysis) are left alone.
* ``EMPTY``: nothing can be lost by re-creating it: a 0-byte file, an SQLite file with no tables (a creation
  rolled back), or part of our schema with no unit in it (a store made before creation was atomic, cut short).
  A writer re-creates it in place and says so; a reader says the directory holds no run yet.
* ``FOREIGN``: tables or rows of another program, or units we cannot read (our ``units`` table with other
  columns, or units without the ``run`` table naming their run): refused, naming the file to move, so that
  nothing of ours is ever written into it.

A file that is not SQLite at all, or a damaged one, is neither: :func:`classify` raises the damage error.
"""

from __future__ import annotations

import enum
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from robusteval.store.faults import damaged_error, translated

#: Our tables and their columns, in order (the schema in sqlite.py creates exactly these).
SCHEMA_COLUMNS = {
    "run": ("name", "value"),
    "units": ("stage", "key", "example_id", "record", "seconds", "created"),
}


class StoreKind(enum.Enum):
    COMPLETE = "complete"
    EMPTY = "empty"
    FOREIGN = "foreign"


@dataclass(frozen=True)
class StoreState:
    kind: StoreKind
    detail: str  # why: "a 0-byte file", "tables of another program: notes (3 rows)", ...


def classify(db: sqlite3.Connection, run_dir: Path, db_path: Path) -> StoreState:
    """The state of the store behind ``db`` (opened read-only or not). Nothing is written but what any SQLite
    reader writes: the rollback of a hot journal left by a killed transaction."""
    with translated(run_dir, db_path):
        problems = db.execute("PRAGMA quick_check").fetchall()
        if problems != [("ok",)]:
            lines = [ln for row in problems for ln in str(row[0]).splitlines() if not ln.startswith("***")]
            raise damaged_error(db_path, lines[0] if lines else "quick_check failed")
        rows = db.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                          "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").fetchall()
        columns = {name: tuple(r[1] for r in db.execute(f"PRAGMA table_info({_quoted(name)})").fetchall())
                   for name, kind in rows if kind == "table"}
        ours = {name for name, cols in columns.items() if SCHEMA_COLUMNS.get(name) == cols}
        if ours == set(SCHEMA_COLUMNS):
            return StoreState(StoreKind.COMPLETE, "a run store")
        others = [name for name, _ in rows if name not in ours]
        if others:
            counted = ", ".join(f"{name} ({'not our columns, ' if name in SCHEMA_COLUMNS else ''}"
                                f"{_count(db, name)})" for name in others[:4])
            return StoreState(StoreKind.FOREIGN, f"tables of another program: {counted}")
        if not ours:  # the size is read after SQLite has rolled back a killed creation's hot journal
            return StoreState(StoreKind.EMPTY, "a 0-byte file" if db_path.stat().st_size == 0
                              else "an SQLite file with no tables")
        if "units" in ours and db.execute("SELECT 1 FROM units LIMIT 1").fetchall():
            return StoreState(StoreKind.FOREIGN, "units without the run table that names their run")
        return StoreState(StoreKind.EMPTY, "part of the tables of an interrupted creation")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _count(db: sqlite3.Connection, name: str) -> str:
    try:
        n = db.execute(f"SELECT COUNT(*) FROM {_quoted(name)}").fetchone()[0]
    except sqlite3.Error:  # a view over something missing, a virtual table of an extension we lack
        return "unreadable"
    return f"{n} row{'s' if n != 1 else ''}"
