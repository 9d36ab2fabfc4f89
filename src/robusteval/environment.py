"""Where a run was made: package versions, the GPU, the git revision of a source checkout.

Recorded in every run's ``info`` and ``summary.json`` so that two results can be told apart later. Versions
are read from package metadata, so nothing heavy is imported to describe it.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from robusteval._version import __version__

_PACKAGES = ("torch", "transformers", "tokenizers", "numpy", "accelerate", "gguf", "httpx", "sympy", "math-verify")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def git_revision() -> str | None:
    """``git describe --always --dirty`` of the checkout robusteval runs from, None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def gpu_name() -> str | None:
    """The first CUDA device's name when torch is already imported and sees one (never imports torch)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
    except Exception:  # a broken driver must not stop a run from being described
        return None
    return None


def run_environment() -> dict[str, Any]:
    """Versions, GPU and git revision of this process (the run lifecycle adds torch's thread choice, which the
    models layer makes: ``torch_threads``)."""
    versions = {name: _version(name) for name in _PACKAGES}
    return {
        "robusteval": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        **{name: value for name, value in versions.items() if value is not None},
        "gpu": gpu_name(),
        "git_revision": git_revision(),
    }
