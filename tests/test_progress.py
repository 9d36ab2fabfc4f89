"""Progress when stderr is not a terminal: plain lines with counts, elapsed time and ETA, and a heartbeat."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from robusteval import progress


def test_plain_lines_report_counts_elapsed_and_eta(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)  # a line after every unit
    assert not progress.console.is_terminal  # pytest captures stderr
    with progress.progress_bar(4, "clean pass", completed=1) as advance:
        for _ in range(3):
            advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "clean pass: 3 of 4 to compute (1 already stored)"
    assert re.fullmatch(r"clean pass: 2/4 \(50%\), \d+ s elapsed, eta \d+ s \(\d+\.\d s/unit\); "
                        r"1 already stored", lines[1])
    assert lines[-1].startswith("clean pass: 4/4 (100%)") and lines[-1].endswith("1 were already stored, done")


def test_heartbeat_while_a_unit_is_slow(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.2)
    with progress.progress_bar(2, "attack") as advance:
        time.sleep(1.0)  # one slow unit: the heartbeat must speak meanwhile
        advance(2)
    beats = [line for line in capsys.readouterr().err.splitlines() if "0/2 (0%)" in line]
    assert beats and all("eta unknown" in line for line in beats)


def test_log_file_records_the_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    with progress.log_to_file(tmp_path / "run.log") as path:
        assert path == tmp_path / "run.log"
        with progress.progress_bar(2, "judge") as advance:
            advance(2)
    text = (tmp_path / "run.log").read_text()
    assert "judge: 2 of 2 to compute" in text and "judge: 2/2 (100%)" in text
    assert not progress.logger.handlers and progress.logger.level == logging.NOTSET


def test_unwritable_log_is_skipped(tmp_path: Path) -> None:
    with progress.log_to_file(tmp_path / "missing-dir" / "run.log") as path:
        assert path is None


def test_a_phase_shows_what_a_slow_batch_is_doing(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.2)
    progress.set_phase("nothing shown: no bar")  # outside any bar: a no-op
    with progress.progress_bar(8, "attack") as advance:
        progress.set_phase("8 example(s) in lock-step, round 3: 8 gradient")
        time.sleep(1.0)
        advance(8)
    beats = [line for line in capsys.readouterr().err.splitlines() if "0/8 (0%)" in line]
    assert beats and all(line.endswith("; now: 8 example(s) in lock-step, round 3: 8 gradient") for line in beats)


def test_a_retry_note_leaves_the_line_when_the_server_answers_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A loopback server refuses twice, then answers: while the requests wait, the line says "retry N in ..."; once
    one succeeds, the note is gone and the phase it replaced is back (issue 35: "Connection refused; retry 7 in 26 s"
    kept showing after the server was back)."""
    from helpers.servers import fake_openai_server
    from robusteval.models.base import GenerationRequest
    from robusteval.models.openai_api import build_openai_backend
    from robusteval.models.registry import ModelSpec

    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)  # a line after every unit
    with (fake_openai_server(tmp_path, "fail-then-ok", fail_count=2, fail_status=503) as srv,
          build_openai_backend(ModelSpec("openai", "fake-model", srv.base_url), max_retries=3, backoff_base=0.01,
                               backoff_max=0.05) as backend,
          progress.progress_bar(2, "judge") as advance):
        progress.set_phase("judging round 1")
        backend.generate([GenerationRequest("first")])
        assert progress._SHOWN[-1].phase == "judging round 1"  # the retries' note is gone, the phase is back
        advance(1)
        backend.generate([GenerationRequest("second")])  # no wait: nothing to take off
        advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert any("retry 1 in" in line for line in lines)  # the wait was shown
    counted = [line for line in lines if line.startswith("judge: 1/2")]
    assert counted and counted[0].endswith("; now: judging round 1") and "retry" not in counted[0]
    progress.wait_over()  # outside any bar: a no-op
