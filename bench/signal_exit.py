"""Seconds from a stop signal (SIGINT, or SIGTERM) to the exit of a `robusteval` run, mid-work (issue 41).

Each scenario starts the real CLI in a subprocess, waits until the run is provably mid-work (a unit of the
stage stored, or the stalled judge server holding a request), sends the signal and times the exit. It checks the
exit code (130 / 143), that the run's last line is its one stop line with the resume command, that the units
stored before the signal are still there, and that no process of the run (a local Ray instance) is left.

Scenarios: ``clean`` (in process, the batched clean pass of `attack matcha`), ``attack`` (in process, the
attack's lock-step rounds), ``ray`` (the attack on a local Ray instance, 2 workers), ``judge`` (an LLM semantic
judge whose loopback server accepts the request and never answers), ``study`` (a study's eval cell). Each runs
idle and beside a busy process (``--busy N`` processes spinning on the CPU, started here; default one per core).
Targets: 5 s idle, 15 s beside a busy process.

    python bench/signal_exit.py                       # everything, idle and busy (a tiny model is built first)
    python bench/signal_exit.py --model /tmp/model --scenarios ray,judge --conditions busy --signal term
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers.stalled import StalledServer  # noqa: E402  (the stop-signal test's never-answering judge)

SAMPLE = Path(str(resources.files("robusteval.data") / "samples" / "math.jsonl"))
TARGETS = {"idle": 5.0, "busy": 15.0}
SCENARIOS = ("clean", "attack", "ray", "judge", "study")


def many_questions(folder: Path, copies: int = 20) -> Path:
    """The packaged math sample repeated (distinct ids): a run that cannot finish before the signal."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    path = folder / "many.jsonl"
    path.write_text("".join(line.replace('"id": "', f'"id": "r{i}-', 1) + "\n" for i in range(copies)
                            for line in lines), encoding="utf-8")
    return path


def stored(out: Path, stage: str | None = None) -> int:
    """Units stored under ``out`` (every results.sqlite below it: a study has one per cell), of ``stage`` if given."""
    total = 0
    for db_path in out.rglob("results.sqlite"):
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
            try:
                sql, params = ("SELECT COUNT(*) FROM units WHERE stage = ?", (stage,)) if stage else (
                    "SELECT COUNT(*) FROM units", ())
                total += int(db.execute(sql, params).fetchone()[0])
            finally:
                db.close()
    return total


def attack_args(model: Path, data: Path, out: Path, limit: int) -> list[str]:
    settings = out.parent / f"{out.name}.search.toml"  # MATCHA's search settings are --config keys
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("steps = 5\n", encoding="utf-8")
    return ["attack", "matcha", "--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", str(data),
            "--answer-type", "number", "--level", "token", "--target-answer", "clean", "--judge", "arith",
            "--semantic-judge", "none", "--limit", str(limit), "--config", str(settings), "--max-new-tokens", "40",
            "--batch-size", "4", "--out", str(out)]


@contextlib.contextmanager
def scenario(name: str, model: Path, work: Path) -> Iterator[tuple[list[str], Callable[[], bool], Path]]:
    """The CLI arguments of scenario ``name``, the test that it is mid-work, and its output folder."""
    data = many_questions(work)
    out = work / "run"
    if name == "clean":
        yield attack_args(model, data, out, 600), lambda: stored(out, "matcha_clean") >= 1, out
    elif name == "attack":  # few questions: the attack begins once their clean pass is done
        yield attack_args(model, data, out, 24), lambda: stored(out, "matcha_attack") >= 1, out
    elif name == "ray":
        yield ([*attack_args(model, data, out, 100), "--executor", "ray", "--workers", "2"],
               lambda: stored(out, "matcha_attack") >= 1, out)
    elif name == "judge":
        server = StalledServer()
        try:
            args = attack_args(model, data, out, 24)
            args[args.index("--semantic-judge") + 1] = f"openai:judge@{server.url}"
            yield args, lambda: server.requests >= 1, out
        finally:
            server.close()
    elif name == "study":
        study = work / "study.toml"
        study.write_text(f'[[models]]\nspec = "hf:{model}"\ndevice = "cpu"\n\n[datasets.math]\ndataset = "jsonl"\n'
                         f'data_file = "{data}"\nlimit = 600\n\n[methods.eval]\nmax_new_tokens = 40\n',
                         encoding="utf-8")
        yield ["study", str(study), "--out", str(out), "--no-report"], lambda: stored(out) >= 1, out
    else:
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] not in "ZX":
                    parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found.update(children)
        frontier += children
    return found


def alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (OSError, IndexError):
        return False


def measure(name: str, model: Path, sig: signal.Signals, ready_within: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix=f"signal-exit-{name}-") as tmp, \
            scenario(name, model, Path(tmp)) as (args, ready, out):
        log = Path(tmp) / "driver.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        with log.open("w") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", *args], stdout=sink,
                                    stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + ready_within
            while proc.poll() is None and not ready() and time.monotonic() < deadline:
                time.sleep(0.05)
            if proc.poll() is not None or not ready():
                return {"scenario": name, "error": f"not mid-work (exit {proc.poll()}): {log.read_text()[-500:]}"}
            children = descendants(proc.pid)
            before = stored(out)
            signalled = time.monotonic()
            proc.send_signal(sig)
            try:
                code: int | None = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                code = None
            took = time.monotonic() - signalled
            time.sleep(1.0)  # the kernel reaps; the reaper of a Ray instance kills what is left
            left = sorted(pid for pid in children if alive(pid))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("robusteval:")]
        said = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
        one_line = len(lines) == 1 and lines[0].startswith(f"robusteval: {said}; stored results are kept")
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return {"scenario": name, "seconds": took, "code": code, "one_line": one_line,
                "kept": stored(out) >= before, "left": len(left)}


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(1.0)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a tiny trained model folder (built in a temp folder if not)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--conditions", default="idle,busy")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy processes beside the run")
    parser.add_argument("--signal", choices=["int", "term"], default="int")
    parser.add_argument("--ready-within", type=float, default=900.0, help="seconds to reach mid-work")
    opts = parser.parse_args()
    # A SIGTERM to the bench (a `timeout`) unwinds it: the busy processes and the run under test are killed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    sig = signal.SIGINT if opts.signal == "int" else signal.SIGTERM
    expected = 130 if sig == signal.SIGINT else 143
    with contextlib.ExitStack() as stack:
        model = opts.model
        if model is None:
            from robusteval.models.tiny import build_tiny_llama

            model = build_tiny_llama(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "model", seed=0,
                                     train_steps=200)
        print("| scenario | condition | load (1 min) | signal to exit, s | target, s | exit code | one line "
              "| stored kept | processes left |\n|---|---|---|---|---|---|---|---|---|", flush=True)
        failed = False
        for condition in opts.conditions.split(","):
            with busy(opts.busy) if condition == "busy" else contextlib.nullcontext():
                for name in opts.scenarios.split(","):
                    row = measure(name, model, sig, opts.ready_within)
                    load = os.getloadavg()[0]
                    if "error" in row:
                        failed = True
                        print(f"| {name} | {condition} | {load:.1f} | {row['error']} |||||", flush=True)
                        continue
                    ok = (row["code"] == expected and row["one_line"] and row["kept"] and not row["left"]
                          and float(row["seconds"]) <= TARGETS[condition])  # type: ignore[arg-type]
                    failed |= not ok
                    print(f"| {name} | {condition} | {load:.1f} | {float(row['seconds']):.2f} "  # type: ignore[arg-type]
                          f"| {TARGETS[condition]:g} | {row['code']} | {'yes' if row['one_line'] else 'NO'} "
                          f"| {'yes' if row['kept'] else 'NO'} | {row['left']} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
