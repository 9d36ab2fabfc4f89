"""A rate as text with its interval: the one formatter the attacks' tables, the CLI and the report share.

It sits with the metrics, below the attacks, so an attack's ``table`` need not import the report (a layer above).
"""

from __future__ import annotations

from collections.abc import Sequence


def format_rate(value: float | None, ci: Sequence[float | None] | None, *, scale: float = 1.0, digits: int = 3,
                unit: str = "") -> str:
    """``0.125 [0.041, 0.290]``: a value and its 95% interval (``-`` for no value; no brackets without an
    interval)."""
    if value is None:
        return "-"
    shown = f"{value * scale:.{digits}f}{unit}"
    if ci is not None and len(ci) == 2 and None not in ci:
        low, high = ci
        shown += f" [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"  # type: ignore[operator]
    return shown
