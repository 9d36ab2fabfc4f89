"""A server that goes away mid-run: its process is stopped (the port refuses connections), then a new one is
started on the same port. Requests in flight wait it out together on the backend's shared backoff, and a batch
fails only when one request has been retried for its whole ``retry_for`` budget."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import robusteval as rv
from helpers.runs import ENV
from helpers.servers import FakeServer, fake_openai_server
from robusteval.evals.answer_first import EvalConfig
from robusteval.models.generation import GenerationOptions

pytestmark = pytest.mark.slow
N = 24


def write_questions(path: Path, n: int = N) -> Path:
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)})
                            + "\n" for i in range(n)), encoding="utf-8")
    return path


def stop_after(server: FakeServer, requests: int, timeout: float = 60) -> float:
    """Stop ``server`` once it has seen ``requests`` requests (so that others are in flight); when it stopped."""
    deadline = time.monotonic() + timeout
    while server.count < requests:
        assert time.monotonic() < deadline, f"the server saw only {server.count} requests"
        time.sleep(0.02)
    server.stop()
    return time.monotonic()


def test_a_10_s_outage_is_waited_out_by_8_requests_in_flight(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    data = write_questions(tmp_path / "q.jsonl")
    # The first 8 requests are held until all 8 have arrived (8 really in flight); each answer takes up to 0.4 s,
    # so the outage begins with requests in flight, which the stopped process drops.
    with fake_openai_server(tmp_path, "ok", gate=8, jitter=0.4) as first:
        backend = rv.load_model(f"openai:fake@{first.base_url}", max_concurrency=8, backoff_max=2.0)
        outcome: dict[str, object] = {}

        def run() -> None:
            try:
                outcome["summary"] = rv.evaluate(EvalConfig(data=rv.DataSpec("jsonl", str(data)),
                                                            generation=GenerationOptions(max_new_tokens=8)),
                                                 backend, tmp_path / "run", batch_size=8)
            except BaseException as exc:  # handed to the test thread
                outcome["error"] = exc

        worker = threading.Thread(target=run)
        worker.start()
        stopped = stop_after(first, 12)
        before = first.requests()
    time.sleep(max(0.0, stopped + 10.0 - time.monotonic()))
    with fake_openai_server(tmp_path, "ok", port=first.port) as second:
        back = time.monotonic()
        worker.join(timeout=60)
        after = second.requests()
    backend.close()
    assert not worker.is_alive() and "error" not in outcome, outcome.get("error")
    summary = outcome["summary"]
    assert summary["n"] == N  # type: ignore[index]
    assert max(r["inflight"] for r in before) == 8
    assert after, "nothing was sent after the server came back"
    # Waited out together: one warning per failed round (a few, growing waits), not one per request and attempt.
    rounds = [float(m.group(1)) for r in caplog.records if (m := re.search(r"retry \d+ in ([\d.]+) s",
                                                                             r.getMessage()))]
    assert 3 <= len(rounds) <= 14 and max(rounds) <= 2.0, rounds
    assert after[0]["t"] - back < 2.5  # the next probe came within backoff_max of the server's return


def test_an_outage_longer_than_retry_for_fails_in_one_line_after_the_budget(tmp_path: Path) -> None:
    data = write_questions(tmp_path / "q.jsonl")
    secret = "sk-outage-0123456789abcdef"
    with fake_openai_server(tmp_path, "ok", jitter=0.2) as server:
        command = [sys.executable, "-m", "robusteval.cli.main", "eval", "--model", f"openai:fake@{server.base_url}",
                   "--api-key-env", "OUTAGE_KEY", "--dataset", "jsonl", "--data-file", str(data), "--max-new-tokens",
                   "8", "--batch-size", "8", "--max-concurrency", "8", "--retry-for", "3", "--out",
                   str(tmp_path / "run")]
        proc = subprocess.Popen(command, env={**ENV, "OUTAGE_KEY": secret}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            stopped = stop_after(server, 10)
            # Down for 6 s (the run must have given up before the server returns)...
            returned = proc.wait(timeout=6)
            failed = time.monotonic()
            with fake_openai_server(tmp_path, "ok", port=server.port):
                pass
            stdout, stderr = proc.communicate()
        finally:
            proc.kill()
    assert returned == 2, stderr[-2000:]
    # ...failing about retry_for after the outage began (a request sent just before it started its budget then).
    assert 2.5 <= failed - stopped <= 5.5, failed - stopped
    errors = [line for line in stderr.splitlines() if line.startswith("robusteval: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr[-3000:]
    line = errors[0]
    assert f"POST {server.base_url}/completions failed after " in line
    assert "(the retry budget, retry_for=3 s); last error: connection error" in line
    assert secret not in stderr + stdout and secret[:8] not in stderr
