"""How many threads torch computes with on a CPU, decided once per process before the first model loads.

torch starts as many intra-op threads as the machine has cores, and every parallel operation waits at a barrier
for all of them: beside one other busy process on 2 cores, one of the two threads keeps waiting for the core the
other process holds, and a run takes 3-10 times as long instead of about twice. So the count is chosen from the
cores this process may use and those other processes keep busy:

- ``--threads N`` (the command line), then ``ROBUSTEVAL_THREADS`` (the environment, for library use), then an
  ``OMP_NUM_THREADS`` already set (by the user, or by the Ray executor for its workers), then a torch imported
  before and set to fewer threads than cores (``torch.set_num_threads`` in a notebook) decide it outright;
- otherwise (``auto``): the cores of this process's CPU affinity (capped by a cgroup CPU quota), less the cores
  other processes keep busy, at least 1. The busy cores are a short sample of ``/proc/stat`` over the allowed
  CPUs (less this process's own CPU time in it), or where there is none the 1-minute load average (less this
  process's own share of it), which remembers commands that already ended; a busy core counts from half busy (one thread too few costs at most a core's share, one too
  many costs a barrier wait at every operation).

Idle OpenMP threads then sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``) when other processes are busy or
fewer threads than cores were asked for: OpenMP reads it once, when torch loads, so it is set only when torch is
not imported yet (a wait policy the user set is kept). :func:`decide_threads` is the pure decision;
:func:`configure_threads` applies it, :func:`apply_threads` makes torch use it once torch is imported.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from robusteval.errors import UserError

#: The environment variable a library user sets the count with (``auto`` or a positive whole number).
ENV = "ROBUSTEVAL_THREADS"
#: Seconds of /proc/stat sampled to see which cores other processes keep busy.
SAMPLE_S = 0.5

logger = logging.getLogger("robusteval")


@dataclass(frozen=True)
class ThreadChoice:
    """The decision and why: recorded in the run's environment and ``run.log``."""

    count: int
    cores: int  # the cores this process may use
    source: str  # "--threads", "ROBUSTEVAL_THREADS", "OMP_NUM_THREADS", "torch.set_num_threads" or "auto"
    busy: float | None = None  # cores other processes keep busy (auto only)
    load: float | None = None  # the 1-minute load average, where the system has one
    wait_policy: str | None = None  # OMP_WAIT_POLICY in force: ours, the user's, or None (OpenMP's default)
    note: str | None = None  # e.g. torch was imported first, so only the count could be set

    def line(self) -> str:
        """``torch threads: 1 of 2 cores (the other is busy: load 1.9)``."""
        if self.source == "auto":
            others = max(0, self.cores - self.count)
            why = ("none busy" if others == 0 else "the other is busy" if self.cores == 2 and others == 1
                   else f"{others} busy")
            load = f": load {self.load:.1f}" if self.load is not None else ""
            if self.busy is not None:
                why = f"{why}{load}; other processes keep {self.busy:.1f} cores busy"
        else:
            why = f"set by {self.source}"
        extra = f"; OMP_WAIT_POLICY={self.wait_policy}" if self.wait_policy else ""
        note = f"; {self.note}" if self.note else ""
        return f"torch threads: {self.count} of {self.cores} cores ({why}{extra}{note})"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line()}


def parse_threads(text: str, *, field: str = "--threads") -> int | None:
    """``auto`` -> None, a positive whole number -> itself; anything else is refused naming ``field``."""
    value = str(text).strip().lower()
    if value == "auto":
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise UserError(f"{field}: expected auto or a positive whole number of threads, got {text!r}")
    return count


def decide_threads(requested: int | None, *, cores: int, busy: float | None = None, load: float | None = None
                   ) -> tuple[int, float | None]:
    """The thread count and the busy cores it assumed: ``requested`` (from ``source``) wins; otherwise ``cores``
    less the cores other processes keep busy now (the ``busy`` sample; the ``load`` estimate only where there is
    no sample, each already without this process's own share; a core counts from half busy), at least 1. Pure.

    The sample wins over the load average because the average remembers the last minutes: right after another
    command ends (``pip install`` before the quick-start, a previous run) it still reads about one busy core on
    an idle machine, and a run started then would keep half its threads for hours."""
    if requested is not None:
        return max(1, requested), None
    estimate = busy if busy is not None else load
    others = min(max(0.0, estimate if estimate is not None else 0.0), float(cores))
    return max(1, cores - math.floor(others + 0.5)), others


# ------------------------------------------------------------------------------------------------ measuring
def usable_cores() -> int:
    """The CPUs this process may run on (its affinity), capped by a cgroup CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cpus, math.ceil(quota)) if quota is not None else cpus)


def _cgroup_quota() -> float | None:
    """CPUs a cgroup quota allows (``docker --cpus``), None when unlimited or unknown."""
    try:
        parts = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if parts and parts[0] != "max":
            return int(parts[0]) / int(parts[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def _cpu_times(cpus: set[int]) -> tuple[float, float] | None:
    """(busy, total) clock ticks of ``cpus`` from /proc/stat, None where there is none."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy = total = 0.0
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
            continue
        ticks = [float(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
        total += sum(ticks)
        busy += sum(ticks) - ticks[3] - ticks[4]
    return (busy, total) if total > 0 else None


def sample_busy(seconds: float = SAMPLE_S) -> float | None:
    """Cores of this process's CPUs that other processes kept busy over ``seconds`` (None without /proc/stat)."""
    try:
        cpus = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    first, own0, wall0 = _cpu_times(cpus), time.process_time(), time.perf_counter()
    if first is None:
        return None
    time.sleep(seconds)
    second, own1, wall1 = _cpu_times(cpus), time.process_time(), time.perf_counter()
    if second is None or second[1] <= first[1]:
        return None
    busy_cores = (second[0] - first[0]) / (second[1] - first[1]) * len(cpus)
    return max(0.0, busy_cores - (own1 - own0) / max(wall1 - wall0, 1e-6))


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def own_load() -> float:
    """This process's share of the 1-minute load average, roughly: its CPU time over its age (at least a
    minute, as the average forgets older time)."""
    try:
        start_ticks = float(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
    return time.process_time() / max(age, 60.0)


# ------------------------------------------------------------------------------------------------ applying
_choice: ThreadChoice | None = None
_restore: dict[str, str | None] = {}  # the environment variables set for torch's start, put back once it started
_say_on_load = False  # the choice is printed when a model loads (a run refused before that prints only its error)


def current_choice() -> ThreadChoice | None:
    """The choice made in this process, None before any."""
    return _choice


def configure_threads(requested: int | None = None, *, source: str = "--threads", echo: bool = True
                      ) -> ThreadChoice:
    """Decide this process's thread count (once; a later explicit ``requested`` decides again) and prepare
    torch for it: before torch is imported through the environment (its OpenMP reads it when it loads),
    afterwards with ``torch.set_num_threads``. The choice is printed when it leaves cores unused (``echo``), once
    torch starts computing with it (:func:`apply_threads`): a command refused before any model loads prints its
    one line and nothing else."""
    global _choice, _say_on_load
    if _choice is not None and requested is None:
        return _choice
    cores, busy, load = usable_cores(), None, None
    if requested is None:
        if os.environ.get(ENV, "").strip():
            requested, source = parse_threads(os.environ[ENV], field=ENV), ENV
            source = source if requested is not None else "auto"
        elif (omp := os.environ.get("OMP_NUM_THREADS", "").strip()).isdigit() and int(omp) > 0:
            requested, source = int(omp), "OMP_NUM_THREADS"
        elif (set_before := _torch_threads_set()) is not None:
            requested, source = set_before, "torch.set_num_threads"
        else:
            source = "auto"
    if requested is None:
        load, sampled = load_average(), sample_busy()
        load_others = None if load is None else load - own_load()
        count, busy = decide_threads(None, cores=cores, busy=sampled, load=load_others)
    else:
        count, _ = decide_threads(requested, cores=cores)
    torch_loaded = "torch" in sys.modules
    policy, note = os.environ.get("OMP_WAIT_POLICY"), None
    if policy is None and (count < cores or (busy or 0) >= 0.5):
        if torch_loaded:
            note = "torch was imported first: OpenMP's wait policy is its default"
        else:
            _set_env("OMP_WAIT_POLICY", "PASSIVE")
            policy = "PASSIVE"
    _choice = ThreadChoice(count=count, cores=cores, source=source, busy=None if busy is None else round(busy, 2),
                           load=None if load is None else round(load, 2), wait_policy=policy, note=note)
    _say_on_load = echo and count != cores
    if torch_loaded:
        apply_threads()
    else:
        _set_env("OMP_NUM_THREADS", str(count))
    return _choice


def _torch_threads_set() -> int | None:
    """The count of a torch imported before and told to use fewer threads than cores (by a library user, a
    test suite), None otherwise: that choice is kept."""
    torch = sys.modules.get("torch")
    count = torch.get_num_threads() if torch is not None else None
    return count if count is not None and count < usable_cores() else None


def _set_env(name: str, value: str) -> None:
    _restore.setdefault(name, os.environ.get(name))
    os.environ[name] = value


def apply_threads() -> ThreadChoice:
    """Make torch (imported by now) compute with the chosen count, deciding it first if nothing has; the
    environment set for torch's start is put back, so child processes decide for themselves."""
    global _say_on_load
    choice = _choice or configure_threads(None, echo=False)
    import torch

    if _say_on_load:
        _say_on_load = False
        print(choice.line(), file=sys.stderr, flush=True)

    if torch.get_num_threads() != choice.count:
        torch.set_num_threads(choice.count)
    for name, value in _restore.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _restore.clear()
    return choice


def log_choice() -> None:
    """Write the choice to the log (``run.log`` while a run is open)."""
    if _choice is not None:
        logger.info(_choice.line())
