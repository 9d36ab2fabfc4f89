"""Run a picklable call in a separate Python process that is killed when it overruns its timeout.

:func:`run_with_timeout` is for work that no signal or thread can interrupt, such as sympy simplifying
hostile input (``2^{10^{10}}``) inside C code for minutes. Workers are fresh interpreters started lazily (the
first call pays ~0.5 s to start one, outside the timeout), reused, and killed on overrun; up to four run at
once. Where no worker can be started (Windows: no ``pass_fds``), :func:`call_inline` runs the call
in-process, bounded by SIGALRM on the main thread and unbounded on other threads.

The callers are the symbolic answer comparison (:mod:`robusteval.data.answers.compare`), so a worker imports
sympy before it reports ready, and the optional math-verify grader (:mod:`robusteval.data.answers.graders`),
which names its package in ``preload``: a worker imports it once, outside the timeout, so timeouts measure the
work, not the import.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = ["call_inline", "run_with_timeout"]

_STARTUP_TIMEOUT = 60.0  # starting Python + importing sympy; not counted against the caller's timeout
#: The "err" reply of a worker that died mid-call (the OOM killer, …), as against an exception the call raised.
WORKER_DIED = "worker died"
_MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
# The child is a fresh interpreter (not multiprocessing): that never re-imports the caller's __main__
# (an unguarded script would otherwise run again in the worker), never forks a process that may hold
# torch/httpx threads' locks, and works inside daemonic multiprocessing workers.
_BOOT = "import sys; sys.path.insert(0, sys.argv[2]); from robusteval.workers import _worker_main; _worker_main(int(sys.argv[1]))"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])  # the directory holding robusteval/


def _worker_main(fd: int) -> None:
    """Child loop: receive (fn, args) on socket ``fd``, send ("ok", result) or ("err", message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent, which then closes our socket
    conn = Connection(fd)
    import sympy  # noqa: F401  -- warm the import before reporting ready, so timeouts measure work only

    conn.send(("ready", None))
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):  # the parent exited or dropped us
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except Exception as exc:
            reply = ("err", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


def _import_modules(modules: tuple[str, ...]) -> None:
    """Run in a worker (or inline): import ``modules`` so later calls do not pay for it."""
    for module in modules:
        importlib.import_module(module)


class _Worker:
    """One child interpreter on a socket pair; killed (and discarded) when a call overruns its timeout."""

    def __init__(self) -> None:
        self.loaded: set[str] = set()  # modules imported through ``preload``
        parent_sock, child_sock = socket.socketpair()
        try:
            fd = child_sock.fileno()
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(fd), _PACKAGE_ROOT],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())
        try:
            ready = self.conn.poll(_STARTUP_TIMEOUT) and self.conn.recv() == ("ready", None)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise RuntimeError("sympy worker did not start")

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
        self.conn.send((fn, args))
        if self.conn.poll(timeout):
            reply: tuple[str, Any] = self.conn.recv()
            return reply
        self.kill()
        return "timeout", None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)
        self.conn.close()


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(_MAX_WORKERS)
        self.idle: list[_Worker] = []
        self.broken = False  # a worker failed to start once (no pass_fds on Windows, ...): stay inline


_pool = _Pool()


def _reset_pool_in_child() -> None:
    # A forked child must not share the parent's sockets; it starts its own workers when needed.
    global _pool
    _pool = _Pool()


def _shutdown_pool() -> None:
    with _pool.lock:
        workers, _pool.idle = _pool.idle, []
    for worker in workers:
        worker.kill()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_in_child)
atexit.register(_shutdown_pool)


class _AlarmTimeout(Exception):
    pass


def call_inline(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
    """Fallback without a worker: SIGALRM bounds the call on the main thread; elsewhere it runs unbounded."""
    use_alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0  # never clobber someone else's timer
    )
    if not use_alarm:
        try:
            return "ok", fn(*args)
        except Exception as exc:
            return "err", repr(exc)

    def on_alarm(signum: int, frame: Any) -> None:
        raise _AlarmTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        return "ok", fn(*args)
    except _AlarmTimeout:
        return "timeout", None
    except Exception as exc:
        return "err", repr(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



def run_with_timeout(
    fn: Callable[..., Any], args: tuple[Any, ...], timeout: float, *, preload: tuple[str, ...] = ()
) -> tuple[str, Any]:
    """Run picklable ``fn(*args)`` in a worker process; ("ok", result), ("timeout", None) or ("err", msg).

    Workers are started lazily (the first call pays ~0.5 s, outside ``timeout``) and reused; one that
    overruns is killed, so a runaway sympy call costs a restart, never a hang. ``preload``: modules the call
    needs, imported once per worker before it and outside ``timeout`` (an import error is an "err" reply).
    """
    pool = _pool
    if pool.broken:
        return _inline_with_preload(fn, args, timeout, preload)
    with pool.slots:
        with pool.lock:
            worker = pool.idle.pop() if pool.idle else None
        if worker is None:
            try:
                worker = _Worker()
            except Exception:
                pool.broken = True
                return _inline_with_preload(fn, args, timeout, preload)
        try:
            missing = tuple(m for m in preload if m not in worker.loaded)
            status, value = worker.call(_import_modules, (missing,), _STARTUP_TIMEOUT) if missing else ("ok", None)
            if status == "ok":
                worker.loaded.update(missing)
                status, value = worker.call(fn, args, timeout)
        except (OSError, EOFError, ValueError):  # the worker died (OOM killer, ...): drop it
            worker.kill()
            return "err", WORKER_DIED
        if status != "timeout":
            with pool.lock:
                pool.idle.append(worker)
        return status, value


def _inline_with_preload(
    fn: Callable[..., Any], args: tuple[Any, ...], timeout: float, preload: tuple[str, ...]
) -> tuple[str, Any]:
    try:
        _import_modules(preload)  # outside the alarm, as a worker would
    except Exception as exc:
        return "err", f"{type(exc).__name__}: {exc}"
    return call_inline(fn, args, timeout)
