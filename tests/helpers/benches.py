"""Loading a script of bench/ as a module in a test, the package beside it (bench/gpubench) importable."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest


def load_bench_script(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module of the bench script ``path``, imported fresh, with nothing left behind after the test (the
    offline variables the scripts set at import, sys.path and sys.modules restored by ``monkeypatch``)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.syspath_prepend(str(path.parent))  # the gpubench package beside it
    spec = importlib.util.spec_from_file_location(f"{path.stem}_under_test", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module
