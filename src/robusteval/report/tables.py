"""Result tables printed to the terminal."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

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


def print_summary_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], *,
                        file: TextIO | None = None) -> None:
    """A rich table on stdout, or on ``file`` (plain text, 160 columns wide)."""
    table = Table()
    for column in columns:
        table.add_column(column, justify="right" if column not in ("model", "dataset", "set", "method") else "left")
    for row in rows:
        table.add_row(*(format_value(row.get(c)) for c in columns))
    console = stdout if file is None or file is sys.stdout else Console(file=file, width=160, no_color=True)
    # The title on a line of its own: as the table's caption rich folds it to the table's width.
    console.print(title, style="bold", markup=False, highlight=False)
    console.print(table)
