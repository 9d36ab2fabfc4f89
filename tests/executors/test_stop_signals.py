"""A run stopped by SIGINT or SIGTERM in process ends within seconds whatever it was doing (a batched generation of
the clean pass, a judge's HTTP call to a server that never answers): exit 130 / 143, one line with the resume
command, the units stored before the signal kept. The real CLI in a subprocess; each test waits until the run
is provably mid-work before it signals, and its bound is issue 41's target under load (the Ray executor's case is
in test_ray_deaths.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

from helpers.runs import ENV, units
from helpers.searchconfig import search_config
from helpers.stalled import StalledServer

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
#: Seconds from the signal to the exit, under load (5 s on an idle machine; bench/signal_exit.py measures both).
STOP_TARGET_S = 15


def _args(model: Path, out: Path, tmp_path: Path, semantic_judge: str = "none") -> list[str]:
    """`attack matcha` on 600 questions: a run that cannot finish before the signal."""
    lines = Path(SAMPLE).read_text(encoding="utf-8").splitlines()
    data = tmp_path / "many.jsonl"
    data.write_text("".join(line.replace('"id": "', f'"id": "r{i}-', 1) + "\n" for i in range(20) for line in lines),
                    encoding="utf-8")
    return ["attack", "matcha", "--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", str(data),
            "--answer-type", "number", "--level", "token", "--target-answer", "clean", "--judge", "arith",
            "--semantic-judge", semantic_judge, "--limit", "600", *search_config(out, steps=5), "--max-new-tokens", "40",
            "--batch-size", "4", "--out", str(out)]


def _stored(out: Path, stage: str) -> int:
    try:
        return len(units(out, stage))
    except Exception:  # not created yet
        return 0


def _stop_mid_work(args: list[str], ready: Callable[[], bool], sig: signal.Signals, log: Path) -> tuple[int, str]:
    """Start the CLI, wait until ``ready()``, send ``sig``; its exit code (within the target) and its output."""
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", *args], stdout=sink,
                                stderr=subprocess.STDOUT, env=ENV)
    try:
        deadline = time.monotonic() + 600
        while proc.poll() is None and not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None and ready(), f"not mid-work: {log.read_text(errors='replace')[-2000:]}"
        proc.send_signal(sig)
        return proc.wait(timeout=STOP_TARGET_S), log.read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _one_stop_line(output: str, said: str) -> None:
    lines = [line for line in output.splitlines() if line.startswith("robusteval:")]
    assert len(lines) == 1 and lines[0].startswith(f"robusteval: {said}; stored results are kept: re-run "
                                                   "`robusteval attack matcha "), output[-2000:]
    assert "Traceback" not in output


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                   (signal.SIGINT, 130, "interrupted")])
def test_a_run_stopped_in_its_clean_pass_exits_at_once_and_keeps_what_it_stored(
        tiny_trained_dir: Path, tmp_path: Path, sig: signal.Signals, code: int, said: str) -> None:
    out = tmp_path / "run"
    ready = lambda: _stored(out, "matcha_clean") >= 1  # noqa: E731  (a batch of the clean pass committed)
    exit_code, output = _stop_mid_work(_args(tiny_trained_dir, out, tmp_path), ready, sig, tmp_path / "log")
    assert exit_code == code, output[-2000:]
    _one_stop_line(output, said)
    assert 1 <= _stored(out, "matcha_clean") < 600 and _stored(out, "matcha_attack") == 0


def test_a_run_stopped_while_its_judge_waits_on_a_stalled_server_exits_at_once(
        tiny_trained_dir: Path, tmp_path: Path) -> None:
    server = StalledServer()
    out = tmp_path / "run"
    try:
        args = _args(tiny_trained_dir, out, tmp_path, semantic_judge=f"openai:judge@{server.url}")
        exit_code, output = _stop_mid_work(args, lambda: server.requests >= 1, signal.SIGINT, tmp_path / "log")
    finally:
        server.close()
    assert exit_code == 130, output[-2000:]
    _one_stop_line(output, "interrupted")
