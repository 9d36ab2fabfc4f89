"""Rich progress bars with rate and ETA, used by every loop over examples."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

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


@contextmanager
def progress_bar(total: int, description: str, completed: int = 0) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n=1)``; shows done/total, rate and ETA. ``completed`` counts units already stored."""
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
        disable=total == 0,  # nothing to do: no empty bar
    )
    with progress:
        task = progress.add_task(description, total=total, completed=completed)
        # Resumed units are shown as done but excluded from the rate, which measures this process only.
        progress.reset(task, total=total, completed=completed)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance
