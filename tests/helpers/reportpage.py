"""Reading a report back as a test sees it: sections, numbers with their tooltips, chart marks, browser data."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any


class Page(HTMLParser):
    """What a test reads back from a report: sections, numbers with their tooltips, chart marks, browser data."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.cells: list[tuple[float | None, str]] = []  # (data-value, data-tip) of every table number
        self.shown: list[str] = []  # the visible text of every table number (value, interval and n)
        self.captions: list[str] = []  # every table caption, in page order
        self.rows: dict[str, list[list[str]]] = {}  # the visible text of each table's body rows, per caption
        self.tables: dict[str, list[tuple[float | None, str]]] = {}  # the same, per table caption
        self.marks: list[float] = []  # data-value of every drawn bar and point
        self.data: dict[str, list[dict[str, Any]]] = {}
        self._browser: str | None = None
        self._in_data = False
        self._caption: list[str] | None = None  # the text of the table caption being read
        self._table = ""
        self._cell: list[str] | None = None  # the text of the table cell being read
        self._in_body = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(str(a.get("id")))
        elif tag == "td" and "num" in (a.get("class") or ""):
            value = a.get("data-value")
            self.cells.append((float(value) if value else None, str(a.get("data-tip"))))
            self.tables.setdefault(self._table, []).append(self.cells[-1])
        if tag == "footer":
            self._table = "runs (footer)"
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.setdefault(self._table, []).append([])
        if tag == "td" and self._in_body:
            self._cell = []
        elif tag == "h4" and a.get("class") == "caption":
            self._caption = []
        elif tag in ("rect", "circle") and a.get("data-value"):
            self.marks.append(float(str(a["data-value"])))
        elif tag == "div" and "browser" in (a.get("class") or "").split():
            self._browser = a.get("id")
        elif tag == "script" and a.get("class") == "data":
            self._in_data = True

    def handle_endtag(self, tag: str) -> None:
        self._in_data = self._in_data and tag != "script"
        if tag == "h4" and self._caption is not None:
            self._table, self._caption = "".join(self._caption), None
            self.captions.append(self._table)
        elif tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None:
            text = "".join(self._cell)
            self.rows[self._table][-1].append(text)
            if self.cells and len(self.shown) < len(self.cells):
                self.shown.append(text)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._caption is not None:
            self._caption.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in_data and self._browser:
            self.data[self._browser] = self.data.get(self._browser, []) + json.loads(data)

    def values_from(self, run: Path, *, table: str = "") -> set[float]:
        """The numbers of ``run`` (of the tables whose caption starts with ``table``)."""
        cells = [c for caption, cells in self.tables.items() if caption.startswith(table) for c in cells]
        return {value for value, tip in cells if value is not None and f"run: {run}" in tip}
