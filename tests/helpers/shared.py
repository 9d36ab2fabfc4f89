"""Where the shared public datasets are, and the one place a test skips (or fails) for want of data or packages.

* Data: ``$ROBUSTEVAL_DATA_DIR`` when it is set (even to a folder that does not exist: that hides the data, so
  ``ROBUSTEVAL_DATA_DIR=/nonexistent pytest`` shows what runs without it); otherwise the repository's
  ``../shared/data``, else ``/work/shared/data`` (a clone elsewhere still finds them).
* :func:`shared_file` returns the path of one dataset file for a test to read. When the file is absent the
  test skips, or FAILS when ``ROBUSTEVAL_REQUIRE_DATA=1`` (or ``ROBUSTEVAL_REQUIRE_ALL=1``), as CI sets.
* :func:`require_modules` does the same for optional packages (fails under ``ROBUSTEVAL_REQUIRE_ALL=1``);
  the ``needs_modules(...)`` mark (see tests/conftest.py) calls it before a test runs.
* :func:`skip_or_fail` is the one place that decides (also used by helpers/mounts.py for root-only tests).

Call these inside a test or fixture (never at import time for data): a test that does not read the data
must run without it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE_DATA = "ROBUSTEVAL_REQUIRE_DATA"
REQUIRE_ALL = "ROBUSTEVAL_REQUIRE_ALL"


def _data_dir() -> Path:
    chosen = os.environ.get("ROBUSTEVAL_DATA_DIR")
    if chosen:  # set: the only place looked at, whether or not it exists
        return Path(chosen)
    candidates = [Path(__file__).resolve().parents[2].parent / "shared" / "data", Path("/work/shared/data")]
    return next((c for c in candidates if c.is_dir()), candidates[-1])


SHARED_DATA = _data_dir()


def skip_or_fail(reason: str, *switches: str) -> NoReturn:
    """Skip with ``reason``, or fail when one of the environment ``switches`` is set to 1."""
    on = [name for name in switches if os.environ.get(name) == "1"]
    if on:
        pytest.fail(f"{on[0]}=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def shared_file(relpath: str) -> Path:
    """``SHARED_DATA / relpath`` when it exists; else skip (fail under ROBUSTEVAL_REQUIRE_DATA/ALL=1)."""
    path = SHARED_DATA / relpath
    if not path.exists():
        skip_or_fail(f"shared dataset {path} is missing (set ROBUSTEVAL_DATA_DIR)", REQUIRE_DATA, REQUIRE_ALL)
    return path


def require_modules(*names: str) -> None:
    """Skip unless every module is importable; fail instead under ROBUSTEVAL_REQUIRE_ALL=1."""
    absent = [name for name in names if importlib.util.find_spec(name) is None]
    if absent:
        skip_or_fail(f"optional package(s) not installed: {', '.join(absent)}", REQUIRE_ALL)


def needs_modules(*names: str) -> pytest.MarkDecorator:
    """Mark: the test needs these optional modules (checked by tests/conftest.py through require_modules)."""
    return pytest.mark.needs_modules(*names)
