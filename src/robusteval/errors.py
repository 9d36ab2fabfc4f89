"""Errors a user can act on. The CLI prints them as one line and exits with code 2.

Library code raises :class:`UserError` (or a subclass) wherever it knows what went wrong. Failures of the
environment that can surface anywhere (out of memory, a full disk, a read-only directory, a missing optional
package) are translated once, at the CLI boundary, by :func:`environment_error`.
"""

from __future__ import annotations

import errno
import shlex
import sqlite3
from collections.abc import Sequence

#: The command line of the run in progress (set by the CLI): what a user types to resume it.
_command: str | None = None


def set_command(argv: Sequence[str] | None) -> None:
    """Remember the ``robusteval`` command line in progress (None: a library call) for :func:`resume_hint`."""
    global _command
    _command = None if argv is None else shlex.join(["robusteval", *argv])


def resume_hint() -> str:
    """How to resume an interrupted run: the same command line (stored units are kept), or the same call."""
    if _command is None:
        return "stored results are kept: make the same call again to resume"
    return f"stored results are kept: re-run `{_command}` to resume"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by the CLI's handler so that every ``finally`` runs (Ray is shut
    down, the store closed) as for Ctrl-C. A BaseException, like KeyboardInterrupt: no ``except Exception``
    swallows it."""


class UserError(Exception):
    """Bad input or configuration: the message names the file, line and field where known."""

    exit_code = 2


class DataError(UserError):
    """A data file that cannot be read as the declared format."""

    def __init__(self, path: object, message: str, line: int | None = None, field: str | None = None):
        where = str(path)
        if line is not None:
            where += f":{line}"
        if field is not None:
            message = f"field '{field}': {message}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.field = field


class BackendError(UserError):
    """A model backend failed in a way retries cannot fix (server down after retries, bad spec)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        # The HTTP status a server refused with (400, 401, 404, 422...); None for anything else. Lets a caller
        # tell "the server does not offer this" from "the server is down".
        self.status = status


_OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory", "defaultcpuallocator")
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_NO_WRITE = (errno.EACCES, errno.EPERM, errno.EROFS)


def _is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    # torch.OutOfMemoryError (CUDA, MPS) subclasses RuntimeError; CPU allocation failures are plain
    # RuntimeErrors from the allocator. Matching by name keeps torch out of this module's imports.
    if any(cls.__name__ == "OutOfMemoryError" for cls in type(exc).__mro__):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc).lower() for m in _OOM_MARKERS)


def _device_of_oom(exc: BaseException) -> str:
    text = str(exc)
    if "CUDA" in text or "cuda" in text:
        return "GPU memory"
    if "MPS" in text:
        return "MPS device memory"
    return "main (CPU) memory"


def environment_error(exc: BaseException) -> UserError | None:
    """The one-line error for a failure of the machine a user can fix; None when ``exc`` is a bug."""
    if isinstance(exc, UserError):
        return exc
    if _is_out_of_memory(exc):
        return UserError(
            f"out of {_device_of_oom(exc)}; use a smaller --batch-size (or --max-new-tokens), a smaller "
            "--dtype such as bfloat16 on a GPU, or a machine with more memory. Stored results are kept: re-run "
            "the same command to resume"
        )
    if type(exc).__module__.startswith("ray."):  # ray is imported only where it already is
        from robusteval.executors.rayfaults import translate

        return translate(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        from robusteval.extras import missing_module_error

        return missing_module_error(exc.name)
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return UserError("no space left on the device holding the run directory; free space and re-run the "
                         "same command to resume (stored results are kept)")
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
        where = f" writing {exc.filename}" if exc.filename else ""
        return UserError(f"no space left on the device{where}; free space and re-run the same command to resume "
                         "(stored results are kept)")
    if isinstance(exc, OSError) and exc.errno in _NO_WRITE:
        where = f" {exc.filename}" if exc.filename else ""
        reason = "the file system is read-only" if exc.errno == errno.EROFS else "permission denied"
        return UserError(f"cannot write{where}: {reason}; choose another --out directory or fix its permissions")
    return None
