"""Where robusteval keeps files outside run directories: converted models, dictionaries, crash logs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$ROBUSTEVAL_CACHE``, else ``~/.cache/robusteval``."""
    return Path(os.environ.get("ROBUSTEVAL_CACHE", Path.home() / ".cache" / "robusteval"))
