"""The one place where a hostile disk becomes a one-line :class:`UserError` for the run store.

Every SQLite call and every file operation of the store runs inside :func:`translated`; what a user can act on
(a damaged file, a full disk, a read-only directory, a lock held by another program) comes out as a sentence
naming the file and what to do. Anything else (a bug, such as using a closed store) is re-raised unchanged.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from robusteval.errors import UserError

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_AUTH, _SQLITE_NOTADB, _SQLITE_ERROR = 23, 26, 1
SQLITE_CANTOPEN = _SQLITE_CANTOPEN

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_NO_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


def damaged_error(db_path: Path, detail: str) -> UserError:
    detail = " ".join(detail.split())
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    return UserError(f"{db_path} is damaged ({detail}); move it aside to start the run over, or restore it "
                     "from a backup")


def foreign_error(db_path: Path, detail: str) -> UserError:
    return UserError(f"{db_path} is not a robusteval run store ({detail}); move that file elsewhere (nothing was "
                     "written to it), or use another run directory")


def disk_full_error(run_dir: Path) -> UserError:
    return UserError(f"no space left on the device holding {run_dir}; free space and re-run the same command "
                     "to resume (stored units are kept)")


def read_only_error(run_dir: Path) -> UserError:
    return UserError(f"cannot write to {run_dir} (read-only or no permission); use another run directory or "
                     "make it writable")


def locked_error(db_path: Path) -> UserError:
    return UserError(f"{db_path} is locked by another program; wait for it to finish (or close it) and re-run "
                     "the same command")


def io_error(db_path: Path, exc: BaseException) -> UserError:
    return UserError(f"cannot read or write {db_path} ({exc}); check the device holding it and re-run the same "
                     "command to resume (stored units are kept)")


def translate(exc: BaseException, run_dir: Path, db_path: Path) -> UserError | None:
    """The UserError for ``exc`` met while using the store in ``run_dir``; None when it is not the user's."""
    if isinstance(exc, OSError):
        if exc.errno in _NO_SPACE:
            return disk_full_error(run_dir)
        if exc.errno in _NO_WRITE:
            return read_only_error(run_dir)
        return None
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.ProgrammingError):
        return None  # InterfaceError, ProgrammingError: misuse of the API, a bug
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        # Raised by Python's sqlite3 itself: bytes that are not UTF-8 where text was stored.
        return damaged_error(db_path, str(exc)) if "decode" in str(exc) else None
    primary = code & 0xFF
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return damaged_error(db_path, str(exc))
    if primary == _SQLITE_FULL:
        return disk_full_error(run_dir)
    if primary in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_AUTH):
        return read_only_error(run_dir)
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return locked_error(db_path)
    if primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN):
        return io_error(db_path, exc)
    if primary == _SQLITE_ERROR and ("no such table" in str(exc) or "no such column" in str(exc)):
        return damaged_error(db_path, str(exc))  # tables dropped or altered by another program
    return None


@contextmanager
def translated(run_dir: Path, db_path: Path | None = None) -> Iterator[None]:
    """Run a block of store I/O; sqlite3 and OS errors a user can fix leave it as one-line UserErrors."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        error = translate(exc, run_dir, db_path if db_path is not None else run_dir)
        if error is None:
            raise
        raise error from exc
