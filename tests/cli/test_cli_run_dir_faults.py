"""A run directory under a real command: a second process, a disk that fills up, a read-only medium.

Full disks and read-only media are real mounts in a private namespace (see ``helpers.mounts``); the second
process is a second real ``robusteval`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.mounts import run_in_namespace
from helpers.runs import ENV, cli, cli_inproc, units
from robusteval.store import DB_NAME, SUMMARY_NAME

pytestmark = pytest.mark.slow


def write_questions(path: Path, n: int) -> Path:
    rows = [{"question": f"Tom has {i} apples and buys {i + 1} more. How many apples now?", "answer": str(2 * i + 1)}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def eval_args(model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", str(data),
            "--max-new-tokens", "8", "--batch-size", "1", "--out", str(out), *extra]


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("robusteval: error:")]


def test_second_process_is_refused_before_loading_the_model(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = write_questions(tmp_path / "q.jsonl", 400)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "robusteval.cli.main", *eval_args(tiny_llama_dir, data, out)]
    first = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and first.poll() is None:
            if (out / DB_NAME).is_file() and len(units(out)) >= 2:
                break
            time.sleep(0.05)
        assert first.poll() is None, "the first run ended before the second could start"
        second = cli(*eval_args(tiny_llama_dir, data, out))
        assert first.poll() is None, "the first run ended while the second ran: the test proves nothing"
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2 and "Traceback" not in second.stderr
    (line,) = error_lines(second.stderr)
    assert f"PID {first.pid}" in line and "in use by another robusteval process" in line
    assert "loading hf:" not in second.stderr  # refused before the model load
    # The killed holder leaves a stale lock: the same command now takes it over and finishes the run.
    stored = units(out)
    resumed = cli_inproc(*eval_args(tiny_llama_dir, data, out, "--limit", "5"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert units(out)[: min(5, len(stored))] == stored[:5]


def test_full_disk_stops_in_one_line_and_resumes_after_space_is_freed(
    namespace: None, tiny_llama_dir: Path, tmp_path: Path
) -> None:
    data = write_questions(tmp_path / "q.jsonl", 300)
    mount = tmp_path / "mnt"
    mount.mkdir()
    out = mount / "run"
    command = " ".join([sys.executable, "-m", "robusteval.cli.main", *eval_args(tiny_llama_dir, data, out)])
    # Each unit commits pages to SQLite's write-ahead log: 256 KB fill up after a few dozen units.
    script = f"""
set -u
mount -t tmpfs -o size=256k tmpfs "$1"
{command} > "$2/first.out" 2> "$2/first.err"; echo "first=$?"
python3 - "$1" > "$2/stored.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(f"file:{{sys.argv[1]}}/run/results.sqlite?mode=ro", uri=True)
print(json.dumps(db.execute("SELECT key, created FROM units ORDER BY rowid").fetchall()))
PY
mount -o remount,size=64m "$1"
{command} > "$2/second.out" 2> "$2/second.err"; echo "second=$?"
python3 - "$1" > "$2/after.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(f"file:{{sys.argv[1]}}/run/results.sqlite?mode=ro", uri=True)
print(json.dumps(db.execute("SELECT key, created FROM units ORDER BY rowid").fetchall()))
PY
"""
    result = run_in_namespace(script, [str(mount), str(tmp_path)], env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "first=2" in result.stdout and "second=0" in result.stdout, result.stdout
    first_err = (tmp_path / "first.err").read_text()
    assert "Traceback" not in first_err
    (line,) = error_lines(first_err)
    assert "no space left on the device" in line and "re-run the same command to resume" in line
    stored = json.loads((tmp_path / "stored.json").read_text())
    after = json.loads((tmp_path / "after.json").read_text())
    assert 0 < len(stored) < 300 and len(after) == 300
    assert after[: len(stored)] == stored  # every unit committed before the disk filled is kept as it was


def test_finished_run_on_a_read_only_medium(namespace: None, tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = write_questions(tmp_path / "q.jsonl", 4)
    medium = tmp_path / "medium"
    out = medium / "run"
    # A process of its own, as the re-run below: a run made in this process (its torch threads set by earlier tests)
    # records another environment than a fresh process's, and the read-only re-run would then have to rewrite it.
    assert cli(*eval_args(tiny_llama_dir, data, out)).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    rerun = " ".join([sys.executable, "-m", "robusteval.cli.main", *eval_args(tiny_llama_dir, data, out)])
    fresh = " ".join([sys.executable, "-m", "robusteval.cli.main",
                      *eval_args(tiny_llama_dir, data, medium / "new")])
    show = f"{sys.executable} -m robusteval.cli.main runs show {out} --json"
    script = f"""
mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"
{rerun} > "$2/rerun.out" 2> "$2/rerun.err"; echo "rerun=$?"
{show} > "$2/show.out" 2> "$2/show.err"; echo "show=$?"
{fresh} > "$2/fresh.out" 2> "$2/fresh.err"; echo "fresh=$?"
"""
    result = run_in_namespace(script, [str(medium), str(tmp_path)], env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "rerun=0" in result.stdout and "show=0" in result.stdout, (
        result.stdout, (tmp_path / "rerun.err").read_text()[-2000:])
    assert "answer-first accuracy" in (tmp_path / "rerun.out").read_text()
    assert json.loads((tmp_path / "show.out").read_text())["summary"]["n"] == 4
    assert "fresh=2" in result.stdout
    fresh_err = (tmp_path / "fresh.err").read_text()
    assert "Traceback" not in fresh_err
    (line,) = error_lines(fresh_err)
    assert "cannot write" in line and "read-only" in line
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert (out / SUMMARY_NAME).is_file() and not os.path.exists(medium / "new")
