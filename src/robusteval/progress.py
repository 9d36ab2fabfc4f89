"""Progress of every loop over units: a live bar in a terminal, plain lines elsewhere, and the run's log.

In a terminal, rich draws a bar with done/total, rate and ETA. When stderr is not a terminal (CI, ``2> log``,
``nohup``) a bar would print nothing for minutes, so each phase writes plain lines instead: when it starts,
whenever a unit finishes and ``interval`` seconds have passed, at least every ``interval`` seconds while a slow
unit runs (a heartbeat), and when it ends. The same lines go to the ``robusteval`` logger, which a run
directory's ``run.log`` handler (see :func:`log_to_file`) records.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

# Progress goes to stderr so stdout stays clean for tables and machine-readable output.
console = Console(stderr=True)
logger = logging.getLogger("robusteval")

#: Seconds between plain progress lines (at most this long without one while a phase runs).
PLAIN_INTERVAL = float(os.environ.get("ROBUSTEVAL_PROGRESS_INTERVAL", "30"))


class _Rate(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task):  # type: ignore[no-untyped-def]
        from rich.text import Text

        speed = task.finished_speed or task.speed
        if not speed:
            return Text("  -- it/s", style="progress.data.speed")
        if speed >= 1:
            return Text(f"{speed:5.2f} it/s", style="progress.data.speed")
        return Text(f"{1 / speed:5.1f} s/it", style="progress.data.speed")


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class _PlainProgress:
    """Counts units done in this process and reports them as plain lines."""

    def __init__(self, total: int, description: str, completed: int, interval: float, echo: bool):
        self.total, self.description, self.resumed = total, description, completed
        self.done = completed
        self.phase = ""  # what the units in flight are doing (set_phase): shown while none has finished
        self.before_wait: str | None = None  # the phase a wait's note replaced (None: no wait shown)
        self.interval = interval
        self.echo = echo
        self.began = time.monotonic()
        self.last = self.began
        self._lock = threading.Lock()
        self.in_flight = 1  # units computed together (a batch): what work inside a batch is a share of
        self.inner: tuple[float, float, str] | None = None  # (done, total, what) inside the units in flight
        self.inner_owner: object | None = None  # the inner_progress scope that reports it

    def in_flight_done(self) -> float:
        """Units the work inside the batch in flight amounts to: its share done times the units it computes."""
        if self.inner is None or self.inner[1] <= 0:
            return 0.0
        done, total, _ = self.inner
        # Never a whole batch: the units themselves say when they are done.
        share = min(max(done / total, 0.0), 0.99)
        return share * min(self.in_flight, max(0, self.total - self.done))

    def line(self, final: bool = False) -> str:
        elapsed = time.monotonic() - self.began
        fresh = self.done - self.resumed + self.in_flight_done()
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        text = f"{self.description}: {self.done}/{self.total}{share}, {_duration(elapsed)} elapsed"
        if final:
            return text + (f", {self.resumed} were already stored" if self.resumed else "") + ", done"
        if self.inner is not None:
            done, total, what = self.inner
            text += f", in the batch of {min(self.in_flight, self.total - self.done)}: {done:.0f}/{total:.0f} {what}"
        if fresh > 0:
            per_unit = elapsed / fresh
            left = self.total - self.done - self.in_flight_done()
            text += f", eta {_duration(per_unit * left)} ({per_unit:.1f} s/unit)"
        else:
            text += ", eta unknown"
        text += f"; {self.resumed} already stored" if self.resumed else ""
        return text + (f"; now: {self.phase}" if self.phase else "")

    def emit(self, text: str) -> None:
        with self._lock:
            self.last = time.monotonic()
            logger.info(text)
            if self.echo:
                print(text, file=sys.stderr, flush=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.inner = None  # the next batch starts from nothing inside
        if time.monotonic() - self.last >= self.interval:
            self.emit(self.line())


@contextmanager
def progress_bar(total: int, description: str, completed: int = 0, *,
                 in_flight: int = 1) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n=1)``; shows done/total, rate and ETA. ``completed`` counts units already stored;
    ``in_flight``: units computed together (a batch), whose progress inside (:func:`inner_progress`: tokens
    generated, lock-step rounds) counts as that share of them, so a batch of minutes moves the line and its ETA."""
    terminal = console.is_terminal
    plain = _PlainProgress(total, description, completed, PLAIN_INTERVAL, echo=not terminal and total > 0)
    plain.in_flight = max(1, in_flight)
    if total > 0:
        plain.emit(f"{description}: {total - completed} of {total} to compute"
                   + (f" ({completed} already stored)" if completed else ""))
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(min(5.0, plain.interval)):
            if time.monotonic() - plain.last >= plain.interval:
                plain.emit(plain.line())

    _SHOWN.append(plain)
    beat = threading.Thread(target=heartbeat, name="robusteval-progress", daemon=True)
    if total > completed and plain.interval > 0:  # interval 0: a line per unit, no heartbeat needed
        beat.start()
    try:
        if terminal and total > 0:
            with _rich_bar(total, description, completed) as bar_advance:

                def advance(n: int = 1) -> None:
                    bar_advance(n)
                    plain.advance(n)

                yield advance
        else:
            yield plain.advance
        if total > 0:
            plain.emit(plain.line(final=True))
    finally:
        _SHOWN.remove(plain)
        stop.set()
        if beat.is_alive():
            beat.join(timeout=1)


#: The progress shown now, innermost last (a stage's bar; a judge's inside an attack draws none).
_SHOWN: list[_PlainProgress] = []


def _current() -> _PlainProgress | None:
    shown = [p for p in _SHOWN if p.total > 0]
    return shown[-1] if shown else None


def set_phase(text: str) -> None:
    """Say what the units in flight are doing (an attack's lock-step round, say), so that a batch that takes
    minutes shows more than "0/8": the periodic progress lines and run.log end with "now: TEXT"."""
    if (current := _current()) is not None:
        current.phase, current.before_wait = text, None


def wait_over() -> None:
    """The wait that :func:`waiting` showed is over (the server answers again): its note leaves the progress
    line, and the phase it replaced comes back. Nothing happens when no wait is shown."""
    current = _current()
    if current is not None and current.before_wait is not None:
        current.phase, current.before_wait = current.before_wait, None


@contextmanager
def inner_progress() -> Iterator[Callable[[float, float, str], None]]:
    """Yield ``report(done, total, what)`` for work inside the units in flight of the progress shown now (a
    generation's tokens, an attack's lock-step rounds): its periodic lines say "in the batch of 8: 24/80 tokens"
    and take the ETA from it. The outermost scope reports; one opened inside it (a generation inside an attack's
    round) reports nothing, so the share stays the outer work's."""
    shown = [p for p in _SHOWN if p.total > 0]
    target = shown[-1] if shown else None
    owner = object()
    if target is None or target.inner_owner is not None:
        yield lambda done, total, what: None
        return
    target.inner_owner = owner

    def report(done: float, total: float, what: str) -> None:
        if target.inner_owner is owner:
            target.inner = (done, total, what)

    try:
        yield report
    finally:
        target.inner_owner = None
        target.inner = None


@contextmanager
def _rich_bar(total: int, description: str, completed: int) -> Iterator[Callable[[int], None]]:
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        _Rate(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    with progress:
        task = progress.add_task(description, total=total, completed=completed)
        # Resumed units are shown as done but excluded from the rate, which measures this process only.
        progress.reset(task, total=total, completed=completed)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance


def waiting(text: str, *, first: bool) -> None:
    """A wait the user should see (an API outage's retries): every round is logged (``run.log``) and becomes the
    progress phase ("now: ..." in the periodic lines); the ``first`` round of a wait is also one line on stderr
    (printed above a terminal's progress bar), so a terminal does not sit silent while requests wait, and
    does not fill with a line per round. :func:`wait_over` takes the note off again."""
    logger.warning(text)
    if (current := _current()) is not None:
        if current.before_wait is None:
            current.before_wait = current.phase
        current.phase = text
    if first:
        if console.is_terminal:
            console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=sys.stderr, flush=True)


def status(text: str) -> None:
    """A one-off phase message (model loading, conversion): printed to stderr and logged."""
    logger.info(text)
    print(text, file=sys.stderr, flush=True)


@contextmanager
def log_to_file(path: str | os.PathLike[str]) -> Iterator[Path | None]:
    """Append the ``robusteval`` logger's lines (progress, phases) to ``path`` while the block runs.

    A directory that cannot be written (a finished run on read-only media) simply gets no log.
    """
    target = Path(path)
    try:
        handler: logging.Handler | None = logging.FileHandler(target, encoding="utf-8", delay=False)
    except OSError:
        handler = None
    if handler is None:
        yield None
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield target
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        handler.close()
