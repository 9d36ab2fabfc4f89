"""An API outage is not silent on the terminal: the first failed round of retries prints one line on stderr
(the later rounds go to run.log and the progress phase), and the run waits the outage out. A real CLI run
against a loopback server that is stopped for 4 s and started again on the same port."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.runs import ENV
from helpers.servers import fake_openai_server

pytestmark = pytest.mark.slow


def test_retries_during_an_outage_show_one_line_on_the_terminal(tmp_path: Path) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)})
                            + "\n" for i in range(24)), encoding="utf-8")
    out = tmp_path / "run"
    with fake_openai_server(tmp_path, "ok", jitter=0.2) as server:
        command = [sys.executable, "-m", "robusteval.cli.main", "eval", "--model", f"openai:fake@{server.base_url}",
                   "--dataset", "jsonl", "--data-file", str(data), "--max-new-tokens", "8", "--batch-size", "8",
                   "--max-concurrency", "8", "--retry-for", "60", "--out", str(out)]
        proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while server.count < 10:
                assert proc.poll() is None, proc.communicate()[1][-2000:]
                assert time.monotonic() < deadline, "the server saw too few requests"
                time.sleep(0.02)
            server.stop()
            time.sleep(4.0)  # down for 4 s: several rounds of growing waits
            with fake_openai_server(tmp_path, "ok", port=server.port):
                returned = proc.wait(timeout=120)
            _, stderr = proc.communicate()
        finally:
            proc.kill()
    assert returned == 0, stderr[-3000:]
    said = [line for line in stderr.splitlines() if "shared by the requests in flight" in line]
    assert len(said) == 1, stderr[-3000:]
    assert said[0].startswith("openai:fake") and "connection error" in said[0] and "; retry 1 in " in said[0]
    logged = [line for line in (out / "run.log").read_text().splitlines() if "shared by the requests" in line]
    assert len(logged) >= 3, logged  # every round is in run.log
