"""``python -m robusteval`` is the ``robusteval`` command."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_command_and_passes_its_exit_code() -> None:
    ok = subprocess.run([sys.executable, "-m", "robusteval", "--help"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.startswith("usage: robusteval"), ok.stderr
    bad = subprocess.run([sys.executable, "-m", "robusteval", "runs", "show", "/nonexistent-run-dir"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("robusteval: error: /nonexistent-run-dir"), bad.stderr
