"""Reading every 95% interval a surface wrote (summary.json and friends, CSV, terminal) for the checks that no
interval of zero width is shown from a finite sample (docs/metrics.md)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

#: ``[0.125, 0.290]``, ``[12.5 %, 29.0 %]`` or ``[95% CI 12.5, 29.0]`` as printed.
PRINTED_INTERVAL = re.compile(
    r"\[(?:95% CI )?(-?\d+(?:\.\d+)?(?:e-?\d+)?) ?%?, (-?\d+(?:\.\d+)?(?:e-?\d+)?) ?%?\]"
)


def intervals_in(value: Any, path: str = "") -> Iterator[tuple[str, list[float]]]:
    """Every (where, [low, high]) under a key naming a 95% interval (``ci95``, ``acc_ci95``, ``ci95.ur`` ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if "ci95" in str(key) and not str(key).endswith("_method"):
                yield from _pairs(item, where)
            else:
                yield from intervals_in(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from intervals_in(item, f"{path}[{i}]")


def _pairs(value: Any, where: str) -> Iterator[tuple[str, list[float]]]:
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        yield where, [float(v) for v in value]
    elif isinstance(value, dict):  # ``ci95: {ur: [...], sr: [...]}`` or ``ci95: {model: [...]}``
        for key, item in value.items():
            yield from _pairs(item, f"{where}.{key}")


def check_json_files(files: Iterable[Path]) -> int:
    """Asserts low < high for every interval in the JSON files; returns how many were checked."""
    checked = 0
    for file in files:
        for where, (low, high) in intervals_in(json.loads(file.read_text("utf-8"))):
            assert low < high, f"{file}{where}: [{low}, {high}]"
            checked += 1
    return checked


def check_csv(text: str) -> int:
    """Asserts ``X_ci_low < X_ci_high`` on every row where both are given; returns how many were checked."""
    rows = list(csv.DictReader(io.StringIO(text)))
    lows = [name for name in (rows[0] if rows else {}) if name.endswith("_ci_low")]
    assert rows and lows, "the CSV has no interval columns to check"
    checked = 0
    for row in rows:
        for low_name in lows:
            high_name = low_name.removesuffix("_ci_low") + "_ci_high"
            if row.get(low_name) not in (None, "") and row.get(high_name) not in (None, ""):
                assert float(row[low_name]) < float(row[high_name]), (row, low_name)
                checked += 1
    return checked


def check_printed(text: str) -> int:
    """Asserts low < high for every interval printed; returns how many were checked."""
    shown = PRINTED_INTERVAL.findall(text)
    for low, high in shown:
        assert float(low) < float(high), f"printed [{low}, {high}]"
    return len(shown)
