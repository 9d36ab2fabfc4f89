"""A run directory whose results.sqlite holds no run, or another program's data, under the real CLI.

The files are real: a 0-byte file, our schema cut short (the ``run`` table without ``units``), a creation killed
mid-transaction (a hot rollback journal beside the file), and an SQLite file with another program's table and
rows. The command is a real ``robusteval eval`` against a loopback OpenAI-compatible server (no model to load).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers.runs import cli_inproc
from helpers.servers import FakeServer, fake_openai_server
from robusteval.store import DB_NAME

N = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    with fake_openai_server(tmp_path_factory.mktemp("server"), "ok") as srv:
        yield srv


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)})
                            + "\n" for i in range(N)), encoding="utf-8")
    return path


def robusteval(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_inproc(*args)  # the command's main (no process boundary is what these files test)


def run_eval(server: FakeServer, data: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return robusteval("eval", "--model", f"openai:fake@{server.base_url}", "--dataset", "jsonl", "--data-file",
                      str(data), "--max-new-tokens", "8", "--out", str(out))


def stored_units(out: Path) -> int:
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM units").fetchone()[0])
    finally:
        db.close()


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("robusteval: error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0].removeprefix("robusteval: error: ")


# ----------------------------------------------------------------------------------------------- the files
def zero_bytes(db: Path) -> None:
    db.write_bytes(b"")


def run_table_only(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE run (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.close()


def killed_mid_creation(db: Path) -> None:
    """A process creating our tables killed (``os._exit``) before its commit: the file holds uncommitted pages
    and a hot journal that SQLite rolls back on the next open, leaving no table."""
    script = textwrap.dedent(f"""
        import os, sqlite3
        con = sqlite3.connect({str(db)!r}, isolation_level=None)
        con.execute("PRAGMA cache_size=1")  # spill pages to the file before the commit
        con.execute("BEGIN")
        con.execute("CREATE TABLE run (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.execute("CREATE TABLE units (stage TEXT NOT NULL, key TEXT NOT NULL, example_id TEXT, "
                    "record TEXT NOT NULL, seconds REAL, created REAL NOT NULL, PRIMARY KEY (stage, key))")
        for i in range(200):
            con.execute("INSERT INTO run VALUES (?, ?)", (str(i), "x" * 2000))
        os._exit(9)
    """)
    subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert db.stat().st_size > 0 and db.with_name(DB_NAME + "-journal").stat().st_size > 0


EMPTY_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "0-byte": (zero_bytes, "a 0-byte file"),
    "run table only": (run_table_only, "part of the tables of an interrupted creation"),
    # SQLite rolls the file back to what it was before the transaction: nothing.
    "killed mid-creation": (killed_mid_creation, "a 0-byte file"),
}


@pytest.mark.parametrize("case", sorted(EMPTY_FILES))
def test_a_store_that_holds_no_run_is_recreated_and_the_log_says_so(
    server: FakeServer, data: Path, tmp_path: Path, case: str
) -> None:
    make, detail = EMPTY_FILES[case]
    out = tmp_path / "run"
    out.mkdir()
    make(out / DB_NAME)
    # Read-only commands say there is no run yet, and write nothing (but for SQLite's own recovery of a hot
    # journal, which any SQLite reader makes: it leaves the file as it was before the killed transaction).
    for command in (("runs", "show", str(out)), ("report", str(out), "--out", str(tmp_path / "r.html"))):
        line = one_error_line(robusteval(*command))
        assert line == f"{out} holds no run yet ({DB_NAME} is {detail}: nothing was stored); a run started in " \
                       "this directory re-creates it"
        assert [p.name for p in out.iterdir()] == [DB_NAME] and not (tmp_path / "r.html").exists()
    first = run_eval(server, data, out)
    assert first.returncode == 0, first.stderr[-2000:]
    note = f"{out / DB_NAME} held no run ({detail}); created a new store in its place"
    assert note in first.stderr and note in (out / "run.log").read_text(encoding="utf-8")
    assert stored_units(out) == N
    again = run_eval(server, data, out)  # the same command again: a finished run, nothing re-created
    assert again.returncode == 0, again.stderr[-2000:]
    assert "held no run" not in again.stderr and "0 of 4 to compute" in again.stderr
    assert robusteval("runs", "show", str(out)).returncode == 0


def test_another_programs_file_is_refused_untouched_until_moved(server: FakeServer, data: Path, tmp_path: Path
                                                                 ) -> None:
    out = tmp_path / "run"
    out.mkdir()
    db = out / DB_NAME
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE measurements (id INTEGER PRIMARY KEY, celsius REAL)")
    con.executemany("INSERT INTO measurements VALUES (?, ?)", [(1, 20.5), (2, 21.0), (3, 19.8)])
    con.commit()
    con.close()
    before = db.read_bytes()
    expected = (f"{db} is not a robusteval run store (tables of another program: measurements (3 rows)); move "
                "that file elsewhere (nothing was written to it), or use another run directory")
    assert one_error_line(run_eval(server, data, out)) == expected
    assert one_error_line(robusteval("runs", "show", str(out))) == expected
    assert db.read_bytes() == before and not (out / "run.log").exists()
    db.rename(tmp_path / "measurements.sqlite")  # what the line says to do
    moved = run_eval(server, data, out)
    assert moved.returncode == 0, moved.stderr[-2000:]
    assert stored_units(out) == N and "held no run" not in moved.stderr
