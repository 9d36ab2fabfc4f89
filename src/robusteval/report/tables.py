"""Result tables printed to the terminal."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from robusteval.metrics.flags import FLAG
from robusteval.metrics.formatting import format_rate
from robusteval.report.method_results import merged, registered_results
from robusteval.report.model import Num

stdout = Console()
if not stdout.is_terminal:
    stdout.width = 160  # piped or logged output: don't fold the table into 80 columns


def format_num(num: Num, *, unit: bool = False) -> str:
    """A report number as ``12.5 [4.1, 29.0]`` (percent numbers x100; ``unit``: ``12.5 % [4.1, 29.0]``), then
    ``⚑`` when it is flagged (:attr:`Num.flags`: the surface prints the flags' text beside it)."""
    marker = f" {FLAG}" if num.flags else ""
    if num.percent:
        return format_rate(num.value, num.ci, scale=100.0, digits=num.digits, unit=" %" if unit else "") + marker
    return format_rate(num.value, num.ci, digits=num.digits) + marker


def print_exclusions(summary: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """What a run left out and why, under its table: ``not attacked: 4 (no answer in the clean completion 4)``
    from the summary's ``skip_reasons``, then what is outside a rate's denominator (its ``exclusions``), or the
    lines of a method that reads its summary its own way (``MethodResults.left_out_lines``: MATCHA's, whose rates are
    over every attacked example, says what its secondary view leaves out)."""
    out = file or sys.stdout
    reasons = summary.get("skip_reasons") or {}
    if reasons:
        detail = ", ".join(f"{reason} {count}" for reason, count in reasons.items())
        print(f"not attacked: {sum(reasons.values())} ({detail})", file=out)
    lines = next((found for results in registered_results() if results.left_out_lines is not None
                  and (found := results.left_out_lines(summary)) is not None), None)
    if lines is None:
        excluded = {name: count for name, count in (summary.get("exclusions") or {}).items() if count}
        lines = [left_out_line(excluded)] if excluded else []
    for line in lines:
        print(line, file=out)


def left_out_line(excluded: Mapping[str, int]) -> str:
    """``left out of the rates: 2 (clean reasoning already judged wrong 2)``: each exclusion as its method's
    ``exclusion_texts`` says it (a name no method gives as itself)."""
    texts = merged(lambda results: results.exclusion_texts)
    detail = ", ".join(f"{texts.get(name, name)} {count}" for name, count in excluded.items())
    return f"left out of the rates: {sum(excluded.values())} ({detail})"


def print_flags(summary: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """Under a run's table, each of its flags on a line: ``⚑ semantic gate: none (edits unchecked)`` (the
    table marks the flagged rates ⚑); the flags as the methods read them (``MethodResults.flag_texts``)."""
    texts = [text for results in registered_results() if results.flag_texts is not None
             for text in results.flag_texts(summary)]
    for text in dict.fromkeys(texts):
        print(f"{FLAG} {text}", file=file or sys.stdout)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if value is None:
        return "-"
    return str(value)


#: Columns that hold a name: left-aligned, and a long name folds onto another line instead of being cut to "…".
NAME_COLUMNS = ("model", "dataset", "set", "method")


def readable_names(names: Sequence[str]) -> dict[str, str]:
    """Each model spec as a table shows it: its short name (``hf:/home/u/.cache/x/llama-3-8b`` -> ``llama-3-8b``,
    :func:`~robusteval.report.collect.short_model`), with more of its path where two different specs would read
    the same (``a/model``, ``b/model``), and the whole spec where even that does not tell them apart."""
    from robusteval.report.collect import short_model

    distinct = list(dict.fromkeys(names))
    shown = {name: short_model(name) for name in distinct}
    for name in distinct:
        twins = [other for other in distinct if shown[other] == shown[name]]
        if len(twins) < 2:
            continue
        for other in twins:  # the shortest tail of its path that no twin shares
            parts = other.split("@", 1)[0].rstrip("/").split("/")
            tails = ["/".join(parts[-k:]) for k in range(1, len(parts) + 1)]
            shown[other] = next((tail for tail in tails if sum(t.endswith(tail) for t in twins) == 1), other)
    return shown


def print_summary_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], *,
                        file: TextIO | None = None) -> None:
    """A rich table on stdout, or on ``file`` (plain text, 160 columns wide). A model spec in the ``model``
    column is shown by its readable name (:func:`readable_names`); no name is ever cut short."""
    table = Table()
    for column in columns:
        named = column in NAME_COLUMNS
        table.add_column(column, justify="left" if named else "right", overflow="fold" if named else "ellipsis")
    models = readable_names([str(row["model"]) for row in rows if isinstance(row.get("model"), str)])
    for row in rows:
        shown = {**row, "model": models[row["model"]]} if isinstance(row.get("model"), str) else row
        table.add_row(*(format_value(shown.get(c)) for c in columns))
    console = stdout if file is None or file is sys.stdout else Console(file=file, width=160, no_color=True)
    # The title on a line of its own: as the table's caption rich folds it to the table's width.
    console.print(title, style="bold", markup=False, highlight=False)
    console.print(table)
