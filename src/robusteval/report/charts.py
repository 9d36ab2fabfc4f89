"""Inline SVG charts, drawn in Python: grouped bars with interval whiskers, and lines with error bars.

No script and no external resource: each chart is a self-contained ``<svg>`` whose marks carry the plotted
value (``data-value``, as the run stored it) and a ``<title>`` with n, the interval and the run directory, so a
reader hovers for provenance and a test compares what is drawn with summary.json. Colours, strokes and fonts
are presentation attributes, not the page's stylesheet, so the same markup is a standalone SVG file (the
page's download link) that looks as it does in the page. :func:`chart_csv` gives a chart's numbers as CSV.
"""

from __future__ import annotations

import csv
import io
import math
from html import escape

from robusteval.report.model import BarChart, LineChart, Num

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
WIDTH = 720
PLOT_TOP, PLOT_BOTTOM, PLOT_LEFT, PLOT_RIGHT = 12, 64, 56, 16
MUTED, INK, GRID = "#656d76", "#24292f", "#e6e8eb"
#: Small grey text: ticks, group names, legend and axis labels.
SMALL = f'font-size="11" fill="{MUTED}"'
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


def _scale(num: Num | None, percent: bool) -> float | None:
    if num is None or num.value is None:
        return None
    return num.value * (100.0 if percent else 1.0)


def _nice_max(top: float) -> float:
    """A round axis maximum at or above ``top``."""
    if top <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(top))
    for step in (1, 2, 2.5, 5, 10):
        if top <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _axis_max(values: list[Num], percent: bool) -> float:
    tops = []
    for num in values:
        value = _scale(num, percent)
        if value is None:
            continue
        tops.append(value)
        if num.ci and None not in num.ci:
            tops.append(num.ci[1] * (100.0 if percent else 1.0))
        if num.std is not None:
            tops.append(value + num.std * (100.0 if percent else 1.0))
    if percent:
        # Nothing above 0 (every rate 0 with no interval drawn): the full 0-100 scale, where a bar at 0 reads
        # as 0% (a 0-1% axis would make it look like a measurement near 1%).
        return 100.0 if not tops or max(tops) > 50 or max(tops) <= 0 else _nice_max(max(tops))
    return _nice_max(max(tops) if tops else 1.0)


def _num_attrs(num: Num) -> str:
    value = "" if num.value is None else repr(float(num.value))
    return f'data-value="{value}"'


def _y_axis(parts: list[str], top: float, height: float, label: str, percent: bool) -> None:
    bottom = PLOT_TOP + height
    for i in range(5):
        tick = top * i / 4
        y = bottom - height * i / 4
        parts.append(f'<line class="grid" x1="{PLOT_LEFT}" x2="{WIDTH - PLOT_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"/>')
        shown = f"{tick:.4g}"
        parts.append(f'<text class="tick" x="{PLOT_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" {SMALL}>{shown}'
                     "</text>")
    parts.append(f'<text class="axis-label" transform="translate(14 {PLOT_TOP + height / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle" {SMALL}>{escape(label)}</text>')


def _legend(parts: list[str], names: list[str], y: float) -> None:
    x = PLOT_LEFT
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text class="legend" x="{x + 14}" y="{y}" {SMALL}>{escape(name)}</text>')
        x += 24 + 7 * len(name)
        if x > WIDTH - 120:
            x, y = PLOT_LEFT, y + 14


def bar_chart(chart: BarChart) -> str:
    height = 220
    total_height = PLOT_TOP + height + PLOT_BOTTOM + 14 * (len(chart.series) // 6)
    values = [chart.values[key] for key in chart.values]
    top = _axis_max(values, chart.percent)
    parts = [_svg_open("bar-chart", chart.title, total_height)]
    _y_axis(parts, top, height, chart.y_label, chart.percent)
    n_groups, n_series = max(1, len(chart.groups)), max(1, len(chart.series))
    slot = (WIDTH - PLOT_LEFT - PLOT_RIGHT) / n_groups
    bar = min(42.0, slot * 0.8 / n_series)
    bottom = PLOT_TOP + height
    for g, group in enumerate(chart.groups):
        start = PLOT_LEFT + g * slot + (slot - bar * n_series) / 2
        for s, series in enumerate(chart.series):
            num = chart.values.get((group, series))
            value = _scale(num, chart.percent)
            if num is None or value is None:
                continue
            x = start + s * bar
            h = max(0.0, min(value, top)) / top * height
            color = PALETTE[s % len(PALETTE)]
            tip = escape(f"{group} · {series}: {num.text()}{'%' if chart.percent else ''} · {num.tip()}")
            parts.append(f'<g class="mark"><rect class="bar" x="{x + 1:.1f}" y="{bottom - h:.1f}" '
                         f'width="{bar - 2:.1f}" height="{max(h, 0.5):.1f}" fill="{color}" {_num_attrs(num)}>'
                         f'<title>{tip}</title></rect>')
            if num.ci and None not in num.ci:
                lo, hi = (min(top, c * (100.0 if chart.percent else 1.0)) for c in num.ci)
                cx = x + bar / 2
                y_lo, y_hi = bottom - lo / top * height, bottom - hi / top * height
                parts.append(f'<path class="whisker" d="M{cx:.1f} {y_lo:.1f}V{y_hi:.1f}M{cx - 4:.1f} {y_lo:.1f}'
                             f'h8M{cx - 4:.1f} {y_hi:.1f}h8" stroke="{INK}" stroke-width="1.2" fill="none"/>')
            parts.append("</g>")
        label = group if len(group) <= slot / 6.5 else group[: max(3, int(slot / 6.5) - 1)] + "…"
        parts.append(f'<text class="group" x="{PLOT_LEFT + g * slot + slot / 2:.1f}" y="{bottom + 16}" '
                     f'text-anchor="middle" {SMALL}><title>{escape(group)}</title>{escape(label)}</text>')
    _legend(parts, list(chart.series), bottom + 40)
    parts.append("</svg>")
    return "".join(parts)


def line_chart(chart: LineChart) -> str:
    height = 220
    total_height = PLOT_TOP + height + PLOT_BOTTOM + 14 * (len(chart.lines) // 4)
    xs = sorted({x for line in chart.lines for x, _ in line.points})
    nums = [num for line in chart.lines for _, num in line.points]
    top = _axis_max(nums, chart.percent)
    span = (xs[-1] - xs[0]) if len(xs) > 1 else 1.0
    width = WIDTH - PLOT_LEFT - PLOT_RIGHT - 20
    bottom = PLOT_TOP + height

    def x_of(x: float) -> float:
        return PLOT_LEFT + 10 + ((x - xs[0]) / span * width if len(xs) > 1 else width / 2)

    def y_of(value: float) -> float:
        return bottom - max(0.0, min(value, top)) / top * height

    parts = [_svg_open("line-chart", chart.title, total_height)]
    _y_axis(parts, top, height, chart.y_label, chart.percent)
    for x in xs:
        parts.append(f'<text class="tick" x="{x_of(x):.1f}" y="{bottom + 16}" text-anchor="middle" {SMALL}>{x:g}'
                     "</text>")
    parts.append(f'<text class="axis-label" x="{PLOT_LEFT + width / 2:.0f}" y="{bottom + 32}" '
                 f'text-anchor="middle" {SMALL}>{escape(chart.x_label)}</text>')
    scale = 100.0 if chart.percent else 1.0
    for i, line in enumerate(chart.lines):
        color = PALETTE[i % len(PALETTE)]
        drawn = [(x, num, _scale(num, chart.percent)) for x, num in sorted(line.points, key=lambda p: p[0])]
        plotted = [(x, v) for x, _, v in drawn if v is not None]
        path = " ".join(f"{'M' if j == 0 else 'L'}{x_of(x):.1f} {y_of(v):.1f}" for j, (x, v) in enumerate(plotted))
        parts.append(f'<g class="series"><path class="line" d="{path}" stroke="{color}" stroke-width="2" '
                     'fill="none"/>')
        for x, num, value in drawn:
            if value is None:
                continue
            low_high = None
            if num.ci and None not in num.ci:
                low_high = (num.ci[0] * scale, num.ci[1] * scale)
            elif num.std is not None:
                low_high = (value - num.std * scale, value + num.std * scale)
            if low_high is not None:
                cx = x_of(x)
                parts.append(f'<path class="whisker" stroke="{color}" stroke-width="1.2" fill="none" '
                             f'd="M{cx:.1f} {y_of(low_high[0]):.1f}V{y_of(low_high[1]):.1f}"/>')
            tip = escape(f"{line.name} at {chart.x_label} = {x:g}: {num.text()}{'%' if chart.percent else ''} · "
                         f"{num.tip()}")
            parts.append(f'<circle class="point" cx="{x_of(x):.1f}" cy="{y_of(value):.1f}" r="4" fill="{color}" '
                         f'{_num_attrs(num)}><title>{tip}</title></circle>')
        parts.append("</g>")
    _legend(parts, [line.name for line in chart.lines], bottom + 50)
    parts.append("</svg>")
    return "".join(parts)


def _svg_open(kind: str, title: str, height: float) -> str:
    return (f'<svg class="chart {kind}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            f'role="img" aria-label="{escape(title)}" font-family="{FONT}" xmlns="http://www.w3.org/2000/svg">'
            f'<rect class="background" width="{WIDTH}" height="{height}" fill="#ffffff"/>')


CSV_COLUMNS = ("value", "shown", "ci95_low", "ci95_high", "n", "std", "note", "runs")


def _csv_numbers(num: Num) -> list[object]:
    """A number's CSV cells: as the run stored it, as drawn (x100 for a percent chart), its interval as stored,
    n (or the basis of a mean over runs), std, note and runs."""
    interval = num.interval()
    shown = None if num.value is None else num.value * num.scale
    return ["" if num.value is None else num.value, "" if shown is None else round(shown, 10),
            *(("", "") if interval is None else interval), num.n if num.n is not None else num.basis,
            "" if num.std is None else num.std, "; ".join(filter(None, (num.caveat, num.note))), " ".join(num.runs)]


def chart_csv(chart: BarChart | LineChart) -> str:
    """Every number of a chart, one row each, as CSV: the bar's group and series (the line's name and x) and
    :data:`CSV_COLUMNS`; ``value`` and the interval as the runs stored them (fractions for rates), ``shown`` as
    drawn."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if isinstance(chart, BarChart):
        writer.writerow(["group", "series", *CSV_COLUMNS])
        for group in chart.groups:
            for series in chart.series:
                num = chart.values.get((group, series))
                if num is not None:
                    writer.writerow([group, series, *_csv_numbers(num)])
    else:
        writer.writerow(["line", chart.x_label or "x", *CSV_COLUMNS])
        for line in chart.lines:
            for x, num in sorted(line.points, key=lambda p: p[0]):
                writer.writerow([line.name, x, *_csv_numbers(num)])
    return out.getvalue()
