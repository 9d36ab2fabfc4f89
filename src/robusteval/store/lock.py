"""One writer per run directory: an exclusive ``flock`` on ``DIR/.lock`` that holds the writer's PID.

Two processes writing the same run would compute every unit twice (and race on summary.json), so the second
one stops at once, naming the first. The kernel drops a ``flock`` when its holder dies, however it dies, so a
lock file left behind by a killed run is simply taken over. The file itself is never deleted: unlinking it
would let a third process lock a fresh inode while a second still holds the old one.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO

from robusteval.errors import UserError
from robusteval.store.faults import translated

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locking, as before
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"

_NO_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


def _read_pid(handle: IO[bytes]) -> str:
    try:
        handle.seek(0)
        text = handle.read(64).decode("ascii", "replace").strip()
    except OSError:
        return "unknown"
    return text if text.isdigit() else "unknown"


class RunLock:
    """Exclusive right to write one run directory, for the life of this object (or until :meth:`release`).

    Take it with :meth:`acquire` as early as possible (before loading a model), then pass it to
    ``RunStore.open(..., lock=lock)``; whoever acquired a lock releases it (``with RunLock.acquire(d) as lock:``).
    A directory nobody can write to (a read-only medium) needs no lock: ``acquire`` then returns a lock with
    ``held`` False instead of failing, and the store opens read-only.
    """

    def __init__(self, run_dir: Path, handle: IO[bytes] | None):
        self.run_dir = run_dir
        self._handle = handle  # a file object, so that a lock forgotten without release() is freed by the GC

    @property
    def held(self) -> bool:
        return self._handle is not None

    @classmethod
    def acquire(cls, run_dir: str | os.PathLike[str]) -> RunLock:
        """Lock ``run_dir`` (created if missing) or raise a UserError naming the process that holds it."""
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise UserError(f"run directory {path}: exists and is not a directory")
        with translated(path):
            path.mkdir(parents=True, exist_ok=True)
        if fcntl is None or not os.access(path, os.W_OK | os.X_OK):
            return cls(path, None)
        with translated(path):
            try:
                fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                if exc.errno in _NO_WRITE:  # e.g. another user's .lock: go on unlocked rather than refuse
                    return cls(path, None)
                raise
        handle = os.fdopen(fd, "r+b", buffering=0)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(handle)
            handle.close()
            if pid == str(os.getpid()):
                raise UserError(f"{path} is already open for writing in this process (PID {pid}); close the "
                                "first store before opening it again") from None
            raise UserError(f"{path} is in use by another robusteval process (PID {pid}); wait for it to finish "
                            "or use another run directory") from None
        try:
            with translated(path):
                # Overwrite in place, then cut: rewriting an existing page needs no new space on a full disk.
                data = f"{os.getpid()}\n".encode("ascii")
                os.pwrite(handle.fileno(), data, 0)
                os.ftruncate(handle.fileno(), len(data))
        except BaseException:
            handle.close()
            raise
        return cls(path, handle)

    def release(self) -> None:
        """Give the directory back (idempotent). Closing the file drops the flock."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"RunLock({str(self.run_dir)!r}, held={self.held})"

