"""The typed model of an HTML report: sections made of tables, charts, notes and example browsers.

Section builders (a method's ``results`` section, ``compare.py``)
turn loaded runs into these objects; ``report/html.py`` renders them. Every number shown is a :class:`Num`,
which carries what it was computed from (n, its 95% interval, the run directory): the page prints the interval
and n in the number's cell (so they survive a screenshot or print), adds the run on hover, and a test compares
the value with the run's summary.json.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from robusteval.metrics.flags import FLAG
from robusteval.metrics.formatting import NO_INTERVAL, format_bounds
from robusteval.metrics.stats import is_collapsed


@dataclass(frozen=True)
class Num:
    """One number of the page: ``value`` as the run stored it, shown as ``percent`` (x100) or as is."""

    value: float | None
    n: int | None = None
    ci: Sequence[float] | None = None
    runs: tuple[str, ...] = ()
    percent: bool = False
    digits: int = 1
    std: float | None = None  # mean(std) over repeats: ``value`` is the mean
    note: str = ""
    #: Shown in the cell where no single n applies (a mean over runs: "2 seeds, n = 12, 10").
    basis: str = ""
    #: A short warning shown in the cell beside n ("10 unparsed"): what a reader must see to trust the value.
    caveat: str = ""
    #: Why the number is weaker than it looks (a MATCHA rate whose reasoning judge is deterministic only, or whose
    #: edits no semantic gate checked): shown as badges in its cell and marked "⚑" in the terminal.
    flags: tuple[str, ...] = ()

    @property
    def scale(self) -> float:
        return 100.0 if self.percent else 1.0

    def text(self) -> str:
        if self.value is None:
            return "–"
        shown = f"{self.value * self.scale:.{self.digits}f}"
        if self.std is not None:
            shown += f" ({self.std * self.scale:.{self.digits}f})"
        return shown

    def interval(self) -> tuple[float, float] | None:
        """The 95% interval as stored (not scaled), when the number has one."""
        if self.ci is None or len(self.ci) != 2 or None in self.ci:
            return None
        return float(self.ci[0]), float(self.ci[1])

    def detail(self) -> str:
        """What the cell shows beside the value: ``[low, high] n=40`` (scaled and rounded like the value), the
        basis of a mean over runs, and any caveat."""
        parts = []
        interval = self.interval()
        if interval is not None and self.value is not None:
            # Never a zero-width interval: a point is not certainty from a finite sample (docs/metrics.md).
            low, high = interval
            parts.append(NO_INTERVAL if is_collapsed(interval)
                         else format_bounds(low * self.scale, high * self.scale, self.digits))
        if self.n is not None:
            parts.append(f"n={self.n}")
        elif self.basis:
            parts.append(self.basis)
        if self.caveat:
            parts.append(self.caveat)
        return " ".join(parts)

    def tip(self) -> str:
        """What hovering shows: the exact value, n, the interval and where it came from."""
        scale = self.scale
        unit = "%" if self.percent else ""
        parts = ["no value (nothing to count)" if self.value is None else f"value {self.value * scale:.4g}{unit}"]
        if self.std is not None:
            parts.append(f"std {self.std * scale:.4g}{unit}")
        if self.n is not None:
            parts.append(f"n = {self.n}")
        interval = self.interval()
        if interval is not None:
            parts.append(f"95% CI {interval[0] * scale:.4g}–{interval[1] * scale:.4g}{unit}")
        if self.basis:
            parts.append(self.basis)
        if self.caveat:
            parts.append(self.caveat)
        parts += [f"{FLAG} {flag}" for flag in self.flags]
        if self.note:
            parts.append(self.note)
        parts += [f"run: {run}" for run in self.runs]
        return " · ".join(parts)


Cell = Num | str


@dataclass(frozen=True)
class Rate:
    """One number of a run: ``metric`` (as the summary names it), the Num, and what its n counts."""

    metric: str
    num: Num
    denominator: str = "n"
    note: str = ""  # shown after the number (a robustness accuracy's label mode and unparsed labels)
    extra: Mapping[str, Any] = field(default_factory=dict)  # more columns for results_frame


@dataclass(frozen=True)
class Table:
    caption: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    #: an optional first header row: (label, number of columns it spans)
    groups: Sequence[tuple[str, int]] = ()
    note: str = ""
    #: where each cell links to (same shape as ``rows``; "" for none): a page anchor such as ``#matcha``
    links: Sequence[Sequence[str]] = ()


@dataclass(frozen=True)
class BarChart:
    """Grouped bars: one cluster per group, one bar per series, each with its interval as a whisker."""

    title: str
    groups: Sequence[str]
    series: Sequence[str]
    values: dict[tuple[str, str], Num]
    y_label: str = ""
    percent: bool = True


@dataclass(frozen=True)
class Line:
    name: str
    points: Sequence[tuple[float, Num]]


@dataclass(frozen=True)
class LineChart:
    title: str
    x_label: str
    y_label: str
    lines: Sequence[Line]
    percent: bool = True


@dataclass(frozen=True)
class Filter:
    """A drop-down over the browser's items: ``key`` is looked up in each item's ``filters``."""

    key: str
    label: str
    options: Sequence[str]


@dataclass(frozen=True)
class Browser:
    """A paginated, filterable list of examples. Items are JSON-ready dicts rendered by the page's script::

        {"title": str, "badges": [[text, css_class]], "filters": {key: value}, "search": str,
         "blocks": [block, ...]}

    A block is ``{"pair": [[label, text_block], [label, text_block]]}`` (side by side),
    ``{"text": text_block, "label": str}``, ``{"rows": [[key, value], ...]}`` or
    ``{"more": summary, "blocks": [...]}`` (collapsed); a text block is ``{"t": text, "m": [[start, end, css_class,
    tooltip], ...]}`` with marks sorted and non-overlapping.
    """

    id: str
    title: str
    items: Sequence[dict[str, Any]]
    filters: Sequence[Filter] = ()
    page_size: int = 20
    empty: str = "no examples"


@dataclass(frozen=True)
class Note:
    text: str
    css: str = "note"


@dataclass(frozen=True)
class Details:
    """A collapsed list of lines (notes, deviations from a paper's setting)."""

    summary: str
    lines: Sequence[str]


Block = Table | BarChart | LineChart | Browser | Note | Details


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> Section:
        self.blocks.extend(blocks)
        return self


@dataclass(frozen=True)
class RunCard:
    """One run's identity for the page footer."""

    path: str
    kind: str
    fields: Sequence[tuple[str, str]]


@dataclass
class Report:
    title: str
    sections: list[Section]
    runs: list[RunCard]
    version: str = ""
