"""A study's leaderboard as a paper's table: one row per model, one column per number, grouped by method and
dataset, each number with its n and interval, read from the study directory's ``leaderboard.json`` (what
``robusteval study`` writes: :mod:`robusteval.studies.leaderboard`; read here, not imported, as the report reads
``study.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from robusteval.methods import methods
from robusteval.report.latex_tex import Heading, Tex, TexTable, escape
from robusteval.report.method_results import NumberFormat, merged
from robusteval.report.model import Cell, Num

#: ``robusteval.studies.leaderboard.JSON_NAME`` (tests/report/test_latex_tables.py holds them equal).
LEADERBOARD = "leaderboard.json"
#: Numbers a study's leaderboard holds that are not shares (shown as they are, not x100), besides the registered
#: methods' (``MethodResults.formats``: word-importance's ORS).
NOT_PERCENT = {"queries": NumberFormat("queries")}
#: How the numbers every method may have are named in a study table's heading (a method's own: its
#: ``MethodResults.metric_names``).
_NAMES = {"acc": "ACC"}


def not_percent() -> dict[str, NumberFormat]:
    """metric -> its format, of every number a study's leaderboard may hold that is not a share: the registered
    methods' first."""
    found: dict[str, NumberFormat] = {}
    for spec in methods():
        results = spec.load_results()
        found.update((results.formats or {}) if results is not None else {})
    return {**found, **NOT_PERCENT}


def metric_names() -> dict[str, str]:
    """metric -> how a study table's heading names it: the common ones, then the registered methods' (the first
    method's where two name one)."""
    return {**merged(lambda results: results.metric_names), **_NAMES}


def _heading(metric: str, reads: str, formats: dict[str, NumberFormat]) -> Heading:
    base, _, at = metric.replace("[", "@").rstrip("]").partition("@")
    name = metric_names().get(base) or (formats[base].heading if base in formats else base)
    name += f" ({at})" if at else ""
    arrow = r"$\uparrow$" if reads.startswith("higher") else r"$\downarrow$" if reads.startswith("lower") else ""
    return Tex(escape(name) + arrow)


def study_table(root: Path) -> list[TexTable]:
    """The study leaderboard of ``root`` (a study directory), or nothing when it holds none."""
    try:
        data = json.loads((root / LEADERBOARD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or not data.get("columns") or not data.get("models"):
        return []
    columns: list[dict[str, Any]] = [c for c in data["columns"] if isinstance(c, dict)]
    cells = {(c.get("model"), c.get("column")): c for c in data.get("cells") or [] if isinstance(c, dict)}
    formats = not_percent()
    rows: list[list[Cell]] = []
    for model in data["models"]:
        row: list[Cell] = [str(model)]
        for column in columns:
            cell = cells.get((model, column.get("name")))
            if cell is None:
                row.append("")
                continue
            metric = str(column.get("metric", ""))
            plain = next((shown for name, shown in formats.items() if metric.startswith(name)), None)
            row.append(Num(cell.get("value"), n=cell.get("n"), ci=cell.get("ci95"), percent=plain is None,
                           digits=1 if plain is None else plain.digits, flags=tuple(cell.get("flags") or ())))
        rows.append(row)
    groups: list[tuple[str, int]] = []
    for column in columns:
        label = f"{column.get('method')} · {column.get('dataset')}"
        if groups and groups[-1][0] == label:
            groups[-1] = (label, groups[-1][1] + 1)
        else:
            groups.append((label, 1))
    except_ = " and ".join(shown.heading for shown in formats.values())
    notes = [f"Each number: value [95% interval], in % except {except_}; arrows: the direction that is better "
             "(accuracies) or more robust."]
    notes += [f"{column.get('method')} · {column.get('dataset')} · {column.get('metric')}: {column.get('note')}."
              for column in columns if column.get("note")]
    notes += [f"Failed: {f.get('cell')} ({f.get('error')})." for f in data.get("failed") or [] if isinstance(f, dict)]
    notes += [f"{note}." for note in data.get("notes") or []]
    headings: list[Heading] = ["Model", *(_heading(str(c.get("metric", "")), str(c.get("reads", "")), formats)
                                          for c in columns)]
    return [TexTable(f"Study leaderboard: {data.get('title') or root.name}", headings, rows, groups=groups,
                     notes=notes, comments=[f"study {root}"])]
