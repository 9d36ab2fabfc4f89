"""Atomic file output: a temporary file beside the target, then a rename, so a kill never leaves half a file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not also keep a half-written copy
        raise
    return target


def write_jsonl_atomic(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]], *,
                       ensure_ascii: bool = False) -> Path:
    """JSON Lines, one row per line (``ensure_ascii`` as in ``json.dumps``, for byte-compatible outputs)."""
    return write_text_atomic(path, "".join(json.dumps(row, ensure_ascii=ensure_ascii) + "\n" for row in rows))
