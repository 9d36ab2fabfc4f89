"""The processes below a process (a driver's local Ray instance), read from /proc, and waiting for them to go."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> dict[int, str]:
    """Every live process below ``pid``: its title (Ray's ``ray::DashboardAgent``, or the executable's name)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] not in "ZX":
            parents[int(entry.name)] = int(stat[1])
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child in [p for p, pp in parents.items() if pp == parent]:
            frontier.append(child)
            with contextlib.suppress(OSError):
                argv0 = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")[0].decode()
                found[child] = os.path.basename(argv0.split(" ")[0])
    return found


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in "ZX"


def wait_gone(pids: dict[int, str], within: float) -> dict[int, str]:
    """Those of ``pids`` still alive after ``within`` seconds (polled; empty as soon as all are gone)."""
    deadline = time.monotonic() + within
    while True:
        left = {pid: title for pid, title in pids.items() if alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_all(pids: dict[int, str]) -> None:
    """Clean up after a test (what a failing run left behind)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
