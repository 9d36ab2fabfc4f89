"""The one run lifecycle every command and pipeline uses: check -> lock -> load -> open -> log -> summary.

1. **Check** the directory's stored identity against this run's, before anything expensive: a directory that
   holds a different run is refused with the fields that differ (an older robusteval's run, with a sentence);
   a ``results.sqlite`` of another program is refused naming it; one that holds no run yet passes.
2. **Lock** the directory (one writer per run; a second process stops at once, naming the first).
3. **Load** the model. A model that cannot load leaves no trace: a directory created in step 2 is removed.
4. **Open** the store (created atomically; one that held no run re-created, said in ``run.log``), record the
   environment in ``info`` and append progress to ``run.log`` in the directory.
5. **Finish**: the summary gets the model identity, seeds, environment and the process's peak memory
   (:mod:`robusteval.peak`, also a line of ``run.log``), and is written atomically.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, overload

from robusteval.config import identity_fields
from robusteval.environment import run_environment
from robusteval.errors import UserError
from robusteval.executors import current_executor
from robusteval.models.threads import current_choice, log_choice
from robusteval.peak import describe as describe_peak
from robusteval.peak import peak_memory
from robusteval.progress import log_to_file, logger, status
from robusteval.store import RunLock, RunStore
from robusteval.store.lock import LOCK_NAME
from robusteval.store.measured import keep_measurements

B = TypeVar("B")

LOG_NAME = "run.log"
#: Bumped when the identity's shape changes; runs made before it cannot be resumed by this version.
IDENTITY_VERSION = 2


def run_identity(command: str, config: Any, model: dict[str, Any] | None, /, **extra: Any) -> dict[str, Any]:
    """What makes a run's results comparable: the command, the normalised model identity (weights, dtype,
    device...) and every config field that changes results."""
    return {"identity_version": IDENTITY_VERSION, "command": command, "model": model, **identity_fields(config),
            **extra}


def _refuse_older_runs(path: Path) -> None:
    stored = RunStore.stored_identity(path)  # None when there is no run yet (no store, or an empty one)
    if stored and "identity_version" not in stored:
        raise UserError(f"{path} holds a run made by robusteval 0.1 (its identity has no model dtype, device or "
                        "weights fingerprint, so this version cannot resume it safely); use another run "
                        "directory, or finish that run with robusteval 0.1")


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
    _refuse_older_runs(path)
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
        # How the units were computed is recorded, not identity: results do not depend on the executor.
        choice = current_choice()  # torch's CPU thread count for this process and why (models.threads)
        environment = {**run_environment(), "torch_threads": None if choice is None else choice.as_dict()}
        info = {**(info or {}), "environment": environment, "executor": current_executor().info()}
        # A directory that cannot be written (a finished run on read-only media) simply gets no log.
        with RunStore.open(path, identity=identity, info=info, lock=lock) as store, log_to_file(path / LOG_NAME):
            for note in store.notes:  # said once the log exists, so run.log keeps it too
                status(note)
            log_choice()  # torch's thread count and why, chosen before the log existed
            yield store, loaded
    finally:
        lock.release()


@contextmanager
def store_for(target: RunStore | str | os.PathLike[str], identity: dict[str, Any],
              info: dict[str, Any] | None = None) -> Iterator[RunStore]:
    """A pipeline's store: the one given, or the run directory ``target`` opened through :func:`open_run`."""
    if isinstance(target, RunStore):
        yield target
        return
    with open_run(target, identity, info=info) as (store, _):
        yield store


#: The shape of a pipeline's summary (its ``TypedDict``), for :func:`finish`.
S = TypeVar("S", bound=Mapping[str, Any])


@overload
def finish(store: RunStore, summary: Mapping[str, Any], *, seeds: dict[str, int] | None = None) -> dict[str, Any]:
    ...


@overload
def finish(store: RunStore, summary: Mapping[str, Any], *, seeds: dict[str, int] | None = None, shape: type[S]
           ) -> S:
    ...


def finish(store: RunStore, summary: Mapping[str, Any], *, seeds: dict[str, int] | None = None,
           shape: type[Mapping[str, Any]] = dict) -> Mapping[str, Any]:
    """Complete ``summary`` with what identifies the run, write summary.json, and return it.

    ``shape``: the pipeline's summary type (a ``TypedDict``), which the returned dict is typed as; it is for
    type checkers and not checked at run time. Without it the result is a ``dict[str, Any]``."""
    identity = store.identity
    info = store.get_meta("info") or {}
    # This process's peak memory so far (a measurement, like a timing: it differs between any two runs).
    peak = peak_memory()
    logger.info(f"{describe_peak(peak)} (this process so far)")
    complete = {**summary, "model_identity": identity.get("model"), "seeds": seeds or {},
                "environment": info.get("environment"), "peak_memory": peak}
    # Returned as summary.json holds it (tuples become lists), so the caller sees what a reader will see.
    written: dict[str, Any] = json.loads(json.dumps(complete, ensure_ascii=False, default=str))
    # A re-run that computed nothing keeps the stored measurements (store.measured): the files stay as they were.
    written = keep_measurements(store.get_meta("summary"), written)
    store.write_summary(written)
    return written


def _remove_if_only_lock(path: Path) -> None:
    """Undo a directory that only the lock created (a failed model load leaves no half-made run)."""
    try:
        if {p.name for p in path.iterdir()} <= {LOCK_NAME}:
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------ public entry points
F = TypeVar("F", bound=Callable[..., Any])


#: ``preflight(arguments)``: a pipeline's checks that read its data but no model (the methods' language, the
#: template's labels), given the call's bound arguments; what the command line checks before it loads the model.
Preflight = Callable[[Mapping[str, Any]], None]


@overload
def public_entry(func: F, *, preflight: Preflight | None = None) -> F: ...
@overload
def public_entry(func: None = None, *, preflight: Preflight | None = None) -> Callable[[F], F]: ...


def public_entry(func: F | None = None, *, preflight: Preflight | None = None) -> F | Callable[[F], F]:
    """Decorator of a pipeline's public function (``rv.evaluate``, ``rv.attack_matcha``, ...): its arguments are
    checked when it is called, before any model loads or directory is made, with the one-line refusals of the
    configs (:func:`robusteval.config.check_call`): an unknown keyword with a suggestion, a config of the wrong
    type, a run directory that is no path, a scalar of the wrong kind. A model given as its spec string
    (``"hf:./model"``) is loaded with default options, as the command line would, after ``preflight`` (the
    pipeline's checks of its data, :data:`Preflight`) has passed: a bad value is refused before a model loads."""
    if func is None:
        return lambda f: public_entry(f, preflight=preflight)
    import dataclasses
    import functools
    import inspect
    import typing

    from robusteval.config import did_you_mean, type_problem
    from robusteval.models.base import Backend

    signature = inspect.signature(func)
    parameters = list(signature.parameters)

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        where = f"{func.__name__}()"
        for name in kwargs:
            if name not in signature.parameters:
                raise UserError(f"{where}: unknown argument {name!r}{did_you_mean(name, parameters)}; arguments: "
                                f"{', '.join(parameters)}")
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise UserError(f"{where}: {exc}") from None
        hints = typing.get_type_hints(func)
        specs: list[str] = []  # models given by spec: loaded once every other argument is known good
        for name, value in bound.arguments.items():
            annotation = hints.get(name)
            options = typing.get_args(annotation) or (annotation,)
            configs = [t for t in options if isinstance(t, type) and dataclasses.is_dataclass(t)]
            if configs and not isinstance(value, tuple(configs)) and not (value is None and type(None) in options):
                raise UserError(f"{where}: {name}: expected a {configs[0].__name__}, got {type(value).__name__} "
                                f"{value!r}")
            if Backend in options:
                if isinstance(value, str):
                    specs.append(name)
                elif not (value is None and type(None) in options) and not hasattr(value, "generate"):
                    raise UserError(f"{where}: {name}: expected a model (rv.load_model(spec)) or its spec string, "
                                    f"got {type(value).__name__} {value!r}")
                continue
            if RunStore in options and not isinstance(value, RunStore | str | os.PathLike):
                raise UserError(f"{where}: {name}: expected a run directory (a str or Path) or an open RunStore, "
                                f"got {type(value).__name__} {value!r}")
            problem = type_problem(value, annotation)
            if problem is not None:
                raise UserError(f"{where}: {name}: {problem}")
        if specs:
            from robusteval.models.loading import load_model

            if preflight is not None:
                preflight(bound.arguments)

            for name in specs:  # a spec string: loaded as the command line loads it, with default options
                bound.arguments[name] = load_model(bound.arguments[name])
        return func(*bound.args, **bound.kwargs)

    return checked
