"""Deaths of the Ray processes a run depends on, and the end of the local Ray instance a run started.

* :func:`translate`: the one translation of Ray's exceptions (a lost object, a worker that could not be
  replaced, a node or Ray's system failing) into one line naming what died and how to resume, exit code 2;
  registered with :func:`robusteval.errors.register_translator`, so `environment_error` consults it (errors.py
  sits below the executors and imports nothing of them).
* :class:`LocalRay`, for a local instance the run started itself (never for a cluster it joined):

  - a **watchdog** thread holding a pidfd of each process the run depends on: the GCS, the raylet, its
    dashboard agent and runtime-env agent (the raylet exits when either agent dies). When one dies, the run
    ends at once with one line naming it and exit code 2. It cannot go on: Ray's own driver code terminates
    the process (exit code 1, no message) the moment it next touches the dead raylet's object store, typically
    within a fraction of a second, so the watchdog acts first instead of waiting for a Python exception;
  - a **reaper** process (:mod:`robusteval.executors.reaper`) that kills the instance when the driver dies
    without shutting it down (SIGKILL, or a crash in native code). Ray starts the GCS and the raylet so that
    they die with the driver, but the agents only notice ~2 s later and then spend ~60 s trying to report to
    the dead GCS (a fixed 60 s timeout in Ray; ``_system_config`` and ``RAY_*`` variables do not shorten it).

A worker (actor) death is not handled here: :class:`~robusteval.executors.ray.RayExecutor` replaces the worker.
Linux only (``/proc`` and pidfds); elsewhere :class:`LocalRay` does nothing and Ray's own behaviour applies.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robusteval.errors import UserError, register_translator, resume_hint

#: The processes of a local instance a run cannot do without, by process title, and the name a user reads.
DEPENDED_ON = {
    "gcs_server": "GCS",
    "raylet": "raylet",
    "ray::DashboardAgent": "dashboard agent",
    "ray::RuntimeEnvAgent": "runtime-env agent",
}


class RayDied(UserError):
    """A Ray process the run depends on died, or the run cannot get its work done on Ray; stored units are kept."""


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int  # /proc start time: tells the process from a later one that reuses its pid
    title: str  # Ray's process title (ray::DashboardAgent) or the executable's name

    @property
    def role(self) -> str | None:
        return DEPENDED_ON.get(self.title)


def ray_processes(root: int) -> list[Proc]:
    """The processes of the local Ray instance ``root`` started, read from ``/proc``: its children that run
    from Ray's installation (the GCS, the raylet, Ray's Python helpers) and everything below them (agents,
    workers). Nothing else: the reaper must never kill a process of the user's (a server, a worker pool)."""
    import ray

    from robusteval.executors.reaper import start_time

    installed = os.path.dirname(os.path.abspath(ray.__file__)) + os.sep
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(entry.path, "stat").read_text(errors="replace").rsplit(")", 1)[1].split()
                    if stat[0] not in ("Z", "X"):
                        parents[int(entry.name)] = int(stat[1])
    frontier = [pid for pid, parent in parents.items() if parent == root and installed in _cmdline(pid)]
    found: list[Proc] = []
    while frontier:
        pid = frontier.pop()
        frontier += [p for p, parent in parents.items() if parent == pid]
        start = start_time(pid)
        if start is not None:
            found.append(Proc(pid, start, _title(pid)))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _title(pid: int) -> str:
    # Ray's workers and agents set a title padded with spaces ("ray::DashboardAgent   "); binaries a path.
    words = _cmdline(pid).split()
    return os.path.basename(words[0]) if words else ""


def death_message(dead: list[Proc]) -> str:
    """The line naming what died. An agent's death makes the raylet exit at once, while the agents notice a
    dead raylet only seconds later: seen dead together, the agents are the cause and are the ones named. Two
    agents seen dead together (the raylet's exit can take the other one with it on a loaded machine) are both
    named: which went first cannot be told afterwards."""
    agents = [p for p in dead if p.title.startswith("ray::")]
    named = agents or dead
    listed = " and ".join(f"Ray's {p.role} ({p.title}, pid {p.pid})" for p in named)
    return (f"{listed} died and the local Ray instance cannot go on without {'it' if len(named) == 1 else 'them'} "
            f"(was it killed, or out of memory?); {resume_hint()}")


#: How long a Ray error waits for a watched process's death to show before it is read as the worker's own. A killed
#: process's sockets close (and its worker fails) before the kernel has torn the process down and its pidfd
#: reads as exited: under load (CI's whole suite beside it) that took over a second, and the line named "a Ray
#: worker died" instead of the agent. Only a Ray error pays it, once.
CLAIM_GRACE_S = 5.0


class LocalRay:
    """The watchdog and the reaper of a local Ray instance started by this process (see the module docstring)."""

    #: The instance being watched now: :func:`translate` asks it whether a Ray error is the echo of a death.
    active: LocalRay | None = None

    def __init__(self, on_death: Callable[[list[Proc]], None] | None = None) -> None:
        self._on_death = on_death or self.end_run
        self._lock = threading.Lock()
        self._stopped = False
        self._pidfds: dict[int, Proc] = {}
        self._wake_r, self._wake_w = os.pipe()
        self._reaper: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
            return
        reaper = Path(__file__).with_name("reaper.py")
        self._reaper = subprocess.Popen([sys.executable, "-I", "-S", str(reaper), str(os.getpid())],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        processes = self.guard()
        for proc in processes:
            if proc.role is None:
                continue
            try:
                fd = os.pidfd_open(proc.pid)
            except OSError:  # already gone: the poll below reports nothing for it, so report it now
                self._on_death([proc])
                continue
            self._pidfds[fd] = proc
        self._thread = threading.Thread(target=self._watch, name="robusteval-ray-watchdog", daemon=True)
        self._thread.start()
        LocalRay.active = self

    def claim_deaths(self, grace: float = CLAIM_GRACE_S) -> list[Proc]:
        """The watched processes found dead within ``grace`` seconds, claimed from the watchdog (which then says
        nothing): a worker killed by its agent's or raylet's death can surface as a Ray error in this thread
        before the watchdog's thread runs, and the line must name the cause, once."""
        with self._lock:
            if self._stopped or not self._pidfds:
                return []
            poller = select.poll()
            for fd in self._pidfds:
                poller.register(fd, select.POLLIN)
            ready = {fd for fd, _ in poller.poll(int(grace * 1000))}
            dead = [proc for fd, proc in self._pidfds.items() if fd in ready]
            if dead:
                self._stopped = True  # the watchdog, woken by the same deaths, finds the run ended
        return dead

    def guard(self) -> list[Proc]:
        """Hand the reaper every process of the instance now (call again after starting new workers)."""
        reaper = self._reaper
        processes = ray_processes(os.getpid())
        if reaper is not None and reaper.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                reaper.stdin.write("".join(f"{p.pid} {p.start}\n" for p in processes).encode())
                reaper.stdin.flush()
        return processes

    def _watch(self) -> None:
        poller = select.poll()
        for fd in [*self._pidfds, self._wake_r]:
            poller.register(fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        with self._lock:
            if self._stopped:
                return
            dead = [proc for fd, proc in self._pidfds.items() if fd in ready]
            if dead:
                self._on_death(dead)

    def end_run(self, dead: list[Proc]) -> None:
        """The one line and exit code 2, at once (from the watchdog thread: Ray's driver code may terminate the
        process within milliseconds); the reaper, seeing this process gone, kills the rest of the instance."""
        print(f"robusteval: error: {death_message(dead)}", file=sys.stderr, flush=True)
        os._exit(RayDied.exit_code)

    def stop_watching(self) -> None:
        """Before the instance is shut down on purpose: its processes exiting is no death then."""
        if LocalRay.active is self:
            LocalRay.active = None
        with self._lock:
            if self._stopped:  # its descriptors are closed (their numbers may belong to others by now)
                return
            self._stopped = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        for fd in [*self._pidfds, self._wake_r, self._wake_w]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._pidfds = {}

    def close(self, timeout: float = 10.0) -> None:
        """After ``ray.shutdown()``: the reaper kills whatever is left of the instance, and exits."""
        self.stop_watching()
        if self._reaper is not None:
            with contextlib.suppress(OSError, ValueError):
                if self._reaper.stdin is not None:
                    self._reaper.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._reaper.wait(timeout=timeout)
            self._reaper = None


@register_translator
def translate(exc: BaseException) -> UserError | None:
    """The one-line error for a failure of Ray (exit code 2, with how to resume); None for anything else,
    including a worker's own exception (:class:`ray.exceptions.RayTaskError`, a bug where not unwrapped)."""
    if not type(exc).__module__.startswith("ray."):  # ray is imported only where it already is
        return None
    from ray import exceptions as rex

    if isinstance(exc, rex.RayTaskError):
        return None
    local = LocalRay.active
    dead = local.claim_deaths() if local is not None else []
    if dead:  # the error is the echo of a death the watchdog would name: name the cause
        return RayDied(death_message(dead))
    if isinstance(exc, rex.RayActorError):
        what = "a Ray worker died"
    elif isinstance(exc, rex.ObjectLostError):
        what = "Ray lost an object the run needs (the process or node holding it died)"
    elif isinstance(exc, rex.GetTimeoutError):
        what = "Ray did not answer in time"
    elif isinstance(exc, rex.NodeDiedError):
        what = "a Ray node died"
    elif isinstance(exc, rex.RaySystemError | rex.RayError):
        what = "Ray failed"
    else:
        return None
    return RayDied(f"{what}: {reason(exc)}; {resume_hint()}")


def reason(exc: BaseException) -> str:
    """The line of a Ray error that says why (Ray's messages run over many lines of ids)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    why = next((line for line in lines if "because" in line or "died" in line), lines[0] if lines else "")
    return (why or type(exc).__name__)[:300]
