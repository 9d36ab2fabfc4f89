"""Host work per lock-step round (issue 40): the wall time of each round of :func:`robusteval.attacks.matcha.lockstep.
run_lockstep` and the host-device syncs made in it, counted on any machine (a CPU one included).

A sync is a call that needs a tensor's value on the host: ``.item()``, ``.tolist()``, ``.cpu()``, ``.numpy()``,
``float()``, ``int()``, ``bool()`` and ``operator.index`` of a tensor. On a GPU each of these on a device tensor
waits for every kernel queued before it, and the GPU then idles while the host does the Python work that follows
until it launches the next kernel. On a CPU they cost nothing, so the count is what tells them apart: it counts the
calls on every tensor (host tensors too), an upper bound of a GPU run's syncs.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import robusteval

#: The tensor methods whose call reads a value on the host (each a sync on a GPU).
SYNCS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__")
#: Where host data is copied to the device: (owner, name).
UPLOADS = ((torch, "tensor"), (torch, "as_tensor"), (torch.Tensor, "to"))
_SRC = str(Path(robusteval.__file__).resolve().parents[1])


@dataclass
class Round:
    """One lock-step round: what it served (the progress phase's text), its seconds and its syncs."""

    phase: str
    began: float
    seconds: float = 0.0
    syncs: int = 0  # reads of a tensor's value on the host
    uploads: int = 0  # copies from the host to the device (counted with ``counts`` only)

    @property
    def kinds(self) -> str:
        """The requests it served, e.g. "8 gradient" or "2 gate, 6 score"."""
        return self.phase.split(": ", 1)[-1]


@dataclass
class HostSyncs:
    """Counts syncs per lock-step round while active (a context manager); ``sites`` counts them by (method, the
    innermost attack line, else robusteval line, that made the call: :func:`_site`). Given ``counts`` (what is on the device), copies of host data to
    the device are counted too (``torch.tensor``/``as_tensor`` made there, ``.to`` of a host tensor): on a GPU each
    copy from ordinary host memory also waits for the kernels queued before it."""

    rounds: list[Round] = field(default_factory=list)
    sites: Counter[tuple[str, str]] = field(default_factory=Counter)
    outside: int = 0  # syncs while no lock-step ran (the clean pass, the final generation, the judges)
    #: Which tensors count (default: all); e.g. those a device audit places on its simulated accelerator
    counts: Callable[[torch.Tensor], bool] | None = None
    _active: bool = False
    _depth: int = 0
    _saved: dict[str, Any] = field(default_factory=dict)

    def __enter__(self) -> HostSyncs:
        from robusteval.attacks.matcha import lockstep

        for name in SYNCS:
            self._saved[name] = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, self._counting(name, self._saved[name]))
        if self.counts is not None:
            for owner, name in UPLOADS:
                self._saved[name] = getattr(owner, name)
                setattr(owner, name, self._uploading(name, self._saved[name]))
        real_phase, real_run = lockstep.set_phase, lockstep._run
        self._saved["set_phase"], self._saved["_run"] = real_phase, real_run

        def phase(text: str) -> None:
            if self._active:
                self._close()
                self.rounds.append(Round(text, time.perf_counter()))
            real_phase(text)

        def run(*args: Any, **kwargs: Any) -> Any:
            self._active = True
            # Before the first round each attack runs up to its first request: counted as a round of its own.
            self.rounds.append(Round("start: first steps (before round 1)", time.perf_counter()))
            try:
                return real_run(*args, **kwargs)
            finally:
                self._close()
                self._active = False

        lockstep.set_phase, lockstep._run = phase, run
        return self

    def __exit__(self, *exc: object) -> None:
        from robusteval.attacks.matcha import lockstep

        for name in SYNCS:
            setattr(torch.Tensor, name, self._saved[name])
        if self.counts is not None:
            for owner, name in UPLOADS:
                setattr(owner, name, self._saved[name])
        lockstep.set_phase, lockstep._run = self._saved["set_phase"], self._saved["_run"]

    def _close(self) -> None:
        if self.rounds and not self.rounds[-1].seconds:
            self.rounds[-1].seconds = time.perf_counter() - self.rounds[-1].began

    def _counting(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if self._depth:  # one read reaching here again (a torch function mode calls the method it intercepted)
                return real(tensor, *args, **kwargs)
            if self.counts is None or self.counts(tensor):
                if self._active and self.rounds and not self.rounds[-1].seconds:
                    self.rounds[-1].syncs += 1
                    self.sites[(name, _site())] += 1
                else:
                    self.outside += 1
            self._depth += 1
            try:
                return real(tensor, *args, **kwargs)
            finally:
                self._depth -= 1

        call.__name__ = name
        return call

    def _uploading(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(source: Any, *args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return real(source, *args, **kwargs)
            self._depth += 1
            try:
                out = real(source, *args, **kwargs)
            finally:
                self._depth -= 1
            counts = self.counts
            moved = (counts is not None and isinstance(out, torch.Tensor) and counts(out)
                     and not (isinstance(source, torch.Tensor) and counts(source)))
            if moved and self._active and self.rounds and not self.rounds[-1].seconds:
                self.rounds[-1].uploads += 1
                self.sites[(name, _site())] += 1
            return out

        call.__name__ = name
        return call

    def by_kind(self) -> dict[str, dict[str, float]]:
        """Per kind of round (what it served, counts left out: "gradient", "gate, score"): rounds, mean ms, mean
        syncs."""
        groups: dict[str, list[Round]] = {}
        for r in self.rounds:
            kind = ", ".join(part.split(" ", 1)[-1] if part[:1].isdigit() else part for part in r.kinds.split(", "))
            groups.setdefault(kind, []).append(r)
        return {kind: {"rounds": len(rs), "ms": 1000 * sum(r.seconds for r in rs) / len(rs),
                       "syncs": sum(r.syncs for r in rs) / len(rs), "uploads": sum(r.uploads for r in rs) / len(rs)}
                for kind, rs in sorted(groups.items())}


def _site() -> str:
    """The innermost frame of an attack's source (robusteval/attacks/: the attack line that asked, through the
    backend or not), else of robusteval's, else the innermost caller, that made the call."""
    frames = traceback.extract_stack()[:-2]  # less this function and the counting wrapper
    for root in (f"{_SRC}/robusteval/attacks/", _SRC):
        for frame in reversed(frames):
            if frame.filename.startswith(root):
                return f"{frame.filename[len(_SRC) + 1:]}:{frame.lineno} in {frame.name}"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno} in {last.name}"
