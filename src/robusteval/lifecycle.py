"""The one run lifecycle every command and pipeline uses: check -> lock -> load -> open -> log.

1. **Check** the directory's stored identity against this run's, before anything expensive: a directory that
   holds a different run is refused with the fields that differ.
2. **Lock** the directory (one writer per run; a second process stops at once, naming the first).
3. **Load** the model. A model that cannot load leaves no trace: a directory created in step 2 is removed.
4. **Open** the store (created atomically) and append progress to ``run.log`` in the directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from robusteval.progress import log_to_file
from robusteval.store import RunLock, RunStore
from robusteval.store.lock import LOCK_NAME

B = TypeVar("B")

LOG_NAME = "run.log"


@contextmanager
def open_run(
    out: str | os.PathLike[str],
    identity: dict[str, Any],
    *,
    info: dict[str, Any] | None = None,
    load: Callable[[], B] | None = None,
) -> Iterator[tuple[RunStore, B | None]]:
    """Yield ``(store, loaded)`` where ``loaded`` is ``load()`` (typically the model backend), or None."""
    path = Path(out)
    RunStore.check_resumable(path, identity)
    created = not path.exists()
    lock = RunLock.acquire(path)
    try:
        try:
            loaded = load() if load is not None else None
        except BaseException:
            if created:
                lock.release()
                _remove_if_only_lock(path)
            raise
        # A directory that cannot be written (a finished run on read-only media) simply gets no log.
        with RunStore.open(path, identity=identity, info=info, lock=lock) as store, log_to_file(path / LOG_NAME):
            yield store, loaded
    finally:
        lock.release()


def _remove_if_only_lock(path: Path) -> None:
    """Undo a directory that only the lock created (a failed model load leaves no half-made run)."""
    try:
        if {p.name for p in path.iterdir()} <= {LOCK_NAME}:
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass
