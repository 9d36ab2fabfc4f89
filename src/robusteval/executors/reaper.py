"""The reaper of a local Ray instance: a tiny process that kills it when the driver that started it is gone.

Started by :class:`robusteval.executors.rayfaults.LocalRay` as ``python -I -S reaper.py DRIVER_PID`` with a pipe
on stdin, in a session of its own (a Ctrl-C at the terminal does not reach it). The driver writes one
``PID START_TIME`` line per process of its Ray instance. When the driver exits, however it exits (SIGKILL
included: it cannot clean up then), the pipe closes, or its pidfd says it died; the reaper then SIGKILLs every
listed process still alive (the start time tells it from a later process that reused the pid) and exits.
Without it, Ray's dashboard and runtime-env agents outlive a killed driver by about 60 s.

Standard library only, run as a script: it must start in milliseconds and import nothing of robusteval.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/PID/stat`` (clock ticks after boot); None when the process is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def kill_listed(guarded: dict[int, int]) -> None:
    for pid, start in guarded.items():
        if start_time(pid) == start:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def main(driver: int) -> None:
    for sig in (signal.SIGINT, signal.SIGHUP):  # only the driver's exit ends it
        signal.signal(sig, signal.SIG_IGN)
    poller = select.poll()
    stdin = sys.stdin.fileno()
    poller.register(stdin, select.POLLIN | select.POLLHUP)
    try:  # the pipe alone would stay open while a process forked by the driver holds its end
        driver_fd = os.pidfd_open(driver)
        poller.register(driver_fd, select.POLLIN)
    except (AttributeError, OSError):
        driver_fd = -1
    os.set_blocking(stdin, False)
    guarded: dict[int, int] = {}
    pending = b""
    driver_gone = False
    while not driver_gone:
        driver_gone = driver_fd in {fd for fd, _ in poller.poll()}
        try:  # what the driver wrote before it died is still in the pipe: read it first
            chunk = os.read(stdin, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            with contextlib.suppress(ValueError):
                pid, start = (int(v) for v in line.split())
                guarded[pid] = start
    kill_listed(guarded)


if __name__ == "__main__":
    main(int(sys.argv[1]))
