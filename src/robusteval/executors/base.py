"""Where units of work are computed: the :class:`Executor` protocol, the in-process default, and the one place
that says which executor is in force (:func:`use_executor` / :func:`current_executor`).

:func:`robusteval.runner.run_units` hands its batches to the current executor and commits every record that
comes back, as it comes back; the driver (this process) stays the only writer of the run store whatever the
executor. The in-process executor computes batch after batch here, exactly as ``run_units`` always did. A
distributed executor (:mod:`robusteval.executors.ray`) sends them to workers that load the models
themselves, so it also answers what a model *is* (:meth:`Executor.describe_model`: its identity as the
workers resolve it) and gives the driver a stand-in for it (:meth:`Executor.load_model`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from robusteval.models.registry import hosted_by

T = TypeVar("T")

#: ``compute(batch) -> one record per item`` (a ``run_units`` compute).
Compute = Callable[[list[Any]], list[dict[str, Any]]]


@dataclass
class BatchResult:
    """What computing one batch gave: its records, the cache units its compute wrote (judge verdicts,
    classifier answers: committed by the driver before the records), and seconds per item."""

    index: int
    records: list[dict[str, Any]]
    seconds: float
    side_units: list[dict[str, Any]] = field(default_factory=list)


def timed(compute: Compute, batch: list[Any]) -> tuple[list[dict[str, Any]], float]:
    """``compute(batch)`` and the seconds it took per item (what every executor records with a batch's units)."""
    began = time.perf_counter()
    records = compute(batch)
    return records, (time.perf_counter() - began) / max(1, len(batch))


class Executor(Protocol):
    """Computes the batches of :func:`~robusteval.runner.run_units`; never writes the store itself."""

    #: "inprocess" or "ray"; recorded in every run's ``info``.
    name: str
    #: True when batches run in other processes (models are then loaded by the workers, from their spec).
    distributed: bool

    def map_batches(self, stage: str, batches: Sequence[list[Any]], compute: Compute, store: Any
                    ) -> Iterator[BatchResult]:
        """Compute every batch; yield each result as soon as it is ready (any order; each batch exactly once)."""
        ...

    def describe_model(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]:
        """The normalised identity of the model ``spec`` under ``options`` where the batches run."""
        ...

    def load_model(self, spec: Any, options: dict[str, Any]) -> Any:
        """The backend the driver holds for ``spec`` (a distributed executor: a stand-in; workers load it)."""
        ...

    def info(self) -> dict[str, Any]:
        """What a run records about how it was computed (never part of its identity)."""
        ...

    def close(self) -> None: ...


class InProcessExecutor:
    """The default: every batch computed here, in order, one after the other."""

    name = "inprocess"
    distributed = False

    def map_batches(self, stage: str, batches: Sequence[list[Any]], compute: Compute, store: Any
                    ) -> Iterator[BatchResult]:
        for index, batch in enumerate(batches):
            records, seconds = timed(compute, batch)
            yield BatchResult(index, records, seconds)

    def describe_model(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]:
        from robusteval.models.identity import describe_here

        return describe_here(spec, **options)

    def load_model(self, spec: Any, options: dict[str, Any]) -> Any:
        from robusteval.models.loading import load_here

        return load_here(spec, **options)

    def info(self) -> dict[str, Any]:
        return {"name": self.name}

    def close(self) -> None:
        pass


_IN_PROCESS = InProcessExecutor()
_current: ContextVar[Executor] = ContextVar("robusteval_executor", default=_IN_PROCESS)


def current_executor() -> Executor:
    """The executor in force (in-process unless a :func:`use_executor` block says otherwise)."""
    return _current.get()


@contextmanager
def use_executor(executor: Executor, *, close: bool = False) -> Iterator[Executor]:
    """Compute every ``run_units`` batch inside the block with ``executor`` (and load models through it);
    ``close``: shut it down when the block ends (its workers and any cluster it started)."""
    token = _current.set(executor)
    try:
        with hosted_by(executor):  # models (a lower layer) load through it without importing executors
            yield executor
    finally:
        _current.reset(token)
        if close:
            executor.close()


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in consecutive batches of ``size`` (at least 1)."""
    size = max(1, size)
    return [list(items[start : start + size]) for start in range(0, len(items), size)]
