"""Result tables printed to the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

stdout = Console()
if not stdout.is_terminal:
    stdout.width = 160  # piped or logged output: don't fold the table into 80 columns


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if value is None:
        return "-"
    return str(value)


def print_summary_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right" if column not in ("model", "dataset", "set", "method") else "left")
    for row in rows:
        table.add_row(*(format_value(row.get(c)) for c in columns))
    stdout.print(table)
