"""Real file-system faults for tests: a private mount namespace (``unshare -m``) where a small tmpfs fills up
or a bind mount turns read-only. The mounts vanish with the namespace's process, so nothing leaks.

Needs root (CI and this project's machines run as root). Without it the tests that use :func:`namespace` skip,
unless ``ROBUSTEVAL_REQUIRE_ALL=1`` (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

import pytest

from helpers.shared import REQUIRE_ALL, skip_or_fail


@functools.cache
def namespace_problem() -> str | None:
    """Why private mount namespaces cannot be used here, or None when they can."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare/mount not installed"
    with tempfile.TemporaryDirectory() as tmp:
        probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=16k tmpfs "$1"', "sh", tmp],
                               capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"cannot mount in a private namespace (needs root): {probe.stderr.strip()[:200]}"
    return None


@pytest.fixture
def namespace() -> None:
    """Skip (or fail under ROBUSTEVAL_REQUIRE_ALL=1) when private mounts are impossible here."""
    problem = namespace_problem()
    if problem is not None:
        skip_or_fail(problem, REQUIRE_ALL)


def run_in_namespace(script: str, args: Sequence[str] = (), *, env: dict[str, str] | None = None,
                     timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the shell ``script`` (positional ``args`` as $1, $2, ...) in a private mount namespace."""
    return subprocess.run(["unshare", "-m", "bash", "-c", script, "bash", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
