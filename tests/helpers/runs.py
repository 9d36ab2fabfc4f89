"""Running the real CLI (in a subprocess, or in-process), killing it mid-run, and reading a run directory."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from robusteval.store import DB_NAME, SUMMARY_NAME

ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
    "OMP_NUM_THREADS": "1",
}


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """The console program in a subprocess: for what only a process shows (its exit status, what it imports at
    startup, signals, kills, a crash's output). Each call pays an interpreter's start and the imports (1-5 s)."""
    return subprocess.run([sys.executable, "-m", "robusteval.cli.main", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


#: The warnings Python's default filters hide from a program's stderr.
_HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def cli_inproc(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command through ``main(argv)`` in this process, its stdout and stderr captured: what :func:`cli`
    returns (returncode, stdout, stderr) without a new interpreter. ``main`` returns the exit code the console
    script exits with (an argparse error's SystemExit gives its code), and prints the same lines. Warnings raised
    meanwhile are written to the captured stderr, as the console script's default filters would show them (so
    a check that an error is one line still sees a stray warning)."""
    from robusteval.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    # What a command sets for its own process (the thread count it chose: torch's and the OpenMP variables) is put
    # back after it, as a subprocess's would vanish with it: the next test starts from the session's settings.
    environ, torch = dict(os.environ), sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          warnings.catch_warnings(record=True) as caught):
        warnings.simplefilter("default")
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse's usage errors and --help; a message exits 1, as the interpreter does
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            if not isinstance(stop.code, int | None):
                print(stop.code, file=err)
        finally:
            os.environ.clear()
            os.environ.update(environ)
            if torch is not None and threads is not None and torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
    for w in caught:
        if not issubclass(w.category, _HIDDEN_WARNINGS):
            err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
    return subprocess.CompletedProcess(["robusteval", *args], code, out.getvalue(), err.getvalue())


def units(out: Path, stage: str | None = None) -> list[tuple[str, str, float]]:
    """(stage, key, created) of every stored unit, read with a plain read-only SQLite connection."""
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT stage, key, created FROM units ORDER BY rowid").fetchall()
    finally:
        db.close()
    return [row for row in rows if stage is None or row[0] == stage]


def records(out: Path, stage: str) -> list[dict]:
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT record FROM units WHERE stage = ? ORDER BY rowid", (stage,)).fetchall()
    finally:
        db.close()
    return [json.loads(r) for (r,) in rows]


def summary(out: Path) -> dict:
    """A run's summary.json without what the last invocation measured of its machine: its peak memory and the torch
    thread count chosen from the load then (two runs that computed the same differ in them)."""
    found = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    found.pop("peak_memory", None)
    if isinstance(found.get("environment"), dict):
        found["environment"].pop("torch_threads", None)
    return found


def run_and_kill(args: list[str], out: Path, *, stage: str, at_least: int, logs: Path, deadline_s: float = 120
                 ) -> list[tuple[str, str, float]]:
    """Start the CLI, SIGKILL it once ``stage`` has ``at_least`` stored units; returns the units stored then.

    Fails when the run finished before it could be killed (the test would then prove nothing).
    """
    with (logs / "stdout").open("w") as so, (logs / "stderr").open("w") as se:
        proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", *args], stdout=so, stderr=se, env=ENV)
    try:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / DB_NAME).is_file():
                try:
                    if len(units(out, stage)) >= at_least:
                        break
                except sqlite3.DatabaseError:  # file or schema not created yet
                    pass
            time.sleep(0.005)
        still_running = proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not still_running:
        raise AssertionError("the run ended before it could be killed: " + (logs / "stderr").read_text()[-2000:])
    assert proc.returncode == -signal.SIGKILL
    assert not (out / SUMMARY_NAME).exists()
    return units(out)


def record_computed(monkeypatch: Any) -> list[tuple[str, str]]:
    """From now on, every (stage, key) this process hands to computation (``runner.compute_units``): what a
    resumed run computed again. Its stored rows cannot say: storing a record equal to the stored one writes
    nothing, so a recomputed unit keeps its creation time."""
    from robusteval import runner

    computed: list[tuple[str, str]] = []
    real = runner.compute_units

    def recording(store: Any, stage: str, items: Any, keys: Any, *args: Any, **kwargs: Any) -> Any:
        computed.extend((stage, key) for key in keys)
        return real(store, stage, items, keys, *args, **kwargs)

    monkeypatch.setattr(runner, "compute_units", recording)
    return computed


#: Fields that measure a run rather than say what it computed: they differ between any two runs.
MEASURED = ("seconds", "peak_memory")


def untimed(value: object) -> object:
    """``value`` without wall-clock fields (``seconds``) and measured peak memory (``peak_memory``), which differ
    between any two runs."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in MEASURED}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def stored_units(out: Path) -> dict[tuple[str, str], tuple[str | None, object]]:
    """Every unit's (example id, record without timings), by (stage, key): what two runs must agree on."""
    from robusteval.store import RunStore

    with RunStore.open_existing(out) as store:
        return {(u["stage"], u["key"]): (u["example_id"], untimed(u["record"])) for u in store.iter_units()}


def differences(a: object, b: object, *, rel: float = 1e-5, path: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ (paths), timings and peak memory ignored: everything exactly equal except floats, which may
    differ by ``rel`` (relative): a padded batched kernel sums in another order than a lone row's, so a loss
    logged from a batch of examples differs from the same loss computed alone in its last bits."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a if k not in MEASURED for d in differences(a[k], b[k], rel=rel, path=f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items against {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, rel=rel, path=f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=rel, abs_tol=rel) else [f"{path}: {a} != {b}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]
