"""A rate as text with its interval: the one formatter the attacks' tables, the CLI and the report share; and
the numbers that files written for readers (CSV, JSON leaderboards) hold, without floating-point noise.

It sits with the metrics, below the attacks, so an attack's ``table`` need not import the report (a layer above).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from robusteval.metrics.stats import COLLAPSED_WIDTH

#: Shown in place of an interval that could not be drawn from the sample (none at all, or one of zero width).
NO_INTERVAL = "[n too small]"


def format_rate(
    value: float | None,
    ci: Sequence[float | None] | None,
    *,
    scale: float = 1.0,
    digits: int = 3,
    unit: str = "",
    n: int | None = None,
) -> str:
    """``0.125 [0.041, 0.290]``: a value and its 95% interval (``-`` for no value; no brackets without an
    interval). A zero-width interval is never printed as one: a point is not certainty from a finite sample, so
    it reads ``[n too small]``, as does a missing interval when ``n`` (then shown as ``n=…``) is given."""
    if value is None:
        return "-"
    shown = f"{value * scale:.{digits}f}{unit}"
    if ci is not None and len(ci) == 2 and None not in ci:
        low, high = float(ci[0]), float(ci[1])  # type: ignore[arg-type]
        shown += (
            f" {format_bounds(low * scale, high * scale, digits)}"
            if high - low > COLLAPSED_WIDTH
            else f" {NO_INTERVAL}"
        )
    elif n is not None:
        shown += f" {NO_INTERVAL}"
    return shown + (f" n={n}" if n is not None else "")


def format_bounds(low: float, high: float, digits: int) -> str:
    """``[low, high]`` with more digits where ``digits`` would round a narrow interval to one point."""
    for shown in range(digits, digits + 6):
        text_low, text_high = f"{low:.{shown}f}", f"{high:.{shown}f}"
        if text_low != text_high:
            break
    return f"[{text_low}, {text_high}]"


#: Decimal places :func:`clean_number` keeps: far below any digit a rate is read to, far above the noise.
CLEAN_DECIMALS = 12


def clean_number(value: float | None, decimals: int = CLEAN_DECIMALS) -> float | None:
    """``value`` without floating-point noise in its last digits, for a file a reader opens: rounded to
    ``decimals`` places, ``-0.0`` as ``0.0`` (``2.7755575615628914e-17`` -> ``0.0``, ``0.30000000000000004`` ->
    ``0.3``); None, nan and infinities as they are. For numbers on the scale of a rate (rates, shares, their
    differences and ratios, interval ends, indices), not for p-values or others that may be legitimately tiny."""
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return value
    return round(float(value), decimals) + 0.0  # + 0.0: -0.0 reads as 0.0


def clean_numbers(data: Any, decimals: int = CLEAN_DECIMALS) -> Any:
    """``data`` (dicts, lists, tuples of numbers and anything else) with every float :func:`clean_number`-ed;
    ints, bools and strings untouched."""
    if isinstance(data, float):
        return clean_number(data, decimals)
    if isinstance(data, dict):
        return {key: clean_numbers(value, decimals) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(clean_numbers(value, decimals) for value in data)
    return data
