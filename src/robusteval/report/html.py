"""Rendering a :class:`~robusteval.report.model.Report` as one self-contained HTML page.

Everything is inline (styles, the browsers' script, SVG charts, example data as JSON blocks); a Content
Security Policy allows only that inline style and script, by hash, and no connection at all, so the page
makes no network request wherever it is opened. Every piece of run data is escaped: as HTML text or
attribute, or, inside the JSON blocks, with ``<``, ``>`` and ``&`` written as ``\\u`` escapes so no run
text can close the block.

Each number's cell prints its interval and n under the value (a screenshot or a printout keeps them); hovering
or focusing it adds the exact value and its run. Each chart carries two download links, its SVG and its data as
CSV, as ``data:`` URLs written into the page (no script, no request).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from collections.abc import Sequence
from html import escape
from importlib import resources
from typing import Any

from robusteval.metrics.flags import FLAG
from robusteval.report.charts import bar_chart, chart_csv, line_chart
from robusteval.report.model import (
    BarChart,
    Block,
    Browser,
    Details,
    LineChart,
    Note,
    Num,
    Report,
    RunCard,
    Section,
    Table,
)


def asset(name: str) -> str:
    return (resources.files("robusteval.report") / "assets" / name).read_text(encoding="utf-8")


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _script_safe(text: str) -> str:
    """JSON text made safe inside ``<script type="application/json">``: nothing in it can end the element."""
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"),
                       ("\u2029", "\\u2029")):
        text = text.replace(char, code)
    return text


def _cell(cell: Num | str, link: str = "", shown_flags: set[tuple[tuple[str, ...], str]] | None = None) -> str:
    """A table cell; a flagged number's badges are spelt out once per row and run (``shown_flags``: the (runs,
    flag) already spelt out), later cells of the same run marking them with a bare ⚑ (the tooltip says which)."""
    if isinstance(cell, Num):
        value = "" if cell.value is None else repr(float(cell.value))
        detail = cell.detail()
        text = escape(cell.text())
        if link:
            text = f'<a href="{escape(link)}">{text}</a>'
        # The space keeps "12.5 [4.1, 29.0] n=40" one phrase in copied text; CSS puts the detail on its own line.
        shown = f'<span class="v">{text}</span>' + (
            f' <span class="d">{escape(detail)}</span>' if detail else "") + _badges(cell.flags, cell.runs, shown_flags)
        return (f'<td class="num" tabindex="0" data-value="{value}" data-tip="{escape(cell.tip())}">'
                f"{shown}</td>")
    if link:
        return f'<td><a href="{escape(link)}">{escape(str(cell))}</a></td>'
    return f"<td>{escape(str(cell))}</td>"


def _badges(flags: Sequence[str], runs: tuple[str, ...], shown: set[tuple[tuple[str, ...], str]] | None) -> str:
    """The badges of ``flags`` not yet in ``shown`` for these ``runs`` (then added to it); a bare ⚑ where all
    were."""
    new = [flag for flag in flags if shown is None or (runs, flag) not in shown]
    if shown is not None:
        shown.update((runs, flag) for flag in new)
    if not new and flags:
        return f' <span class="badge flag" title="{escape("; ".join(flags))}">{FLAG}</span>'
    return "".join(f' <span class="badge flag">{FLAG} {escape(flag)}</span>' for flag in new)


def _row(row: Sequence[Num | str], links: Sequence[str]) -> str:
    shown: set[tuple[tuple[str, ...], str]] = set()
    return "<tr>" + "".join(_cell(c, links[i] if i < len(links) else "", shown) for i, c in enumerate(row)) + "</tr>"


def table(block: Table) -> str:
    head = ""
    if block.groups:
        head += "<tr>" + "".join(f'<th colspan="{span}">{escape(label)}</th>' for label, span in block.groups) + "</tr>"
    head += "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in block.columns) + "</tr>"
    links = list(block.links) or [[] for _ in block.rows]
    body = "".join(_row(row, row_links) for row, row_links in zip(block.rows, links, strict=True))
    note = f'<p class="note">{escape(block.note)}</p>' if block.note else ""
    return (f'<div class="table-wrap"><h4 class="caption">{escape(block.caption)}</h4><table><thead>{head}</thead>'
            f"<tbody>{body}</tbody></table>{note}</div>")


#: Example data above this size is stored gzip-compressed and base64-encoded (the page's script inflates it
#: with the browser's own DecompressionStream): 10,000 MATCHA examples take a few MB instead of tens.
COMPRESS_ABOVE = 256_000


def browser_data(items: list[dict[str, Any]]) -> tuple[str, str]:
    """(encoding, text) of a browser's items inside its ``<script type="application/json">`` block."""
    text = _dumps(items)  # serialised once, whichever way it is stored
    if len(text) <= COMPRESS_ABOVE:
        return "json", _script_safe(text)
    packed = gzip.compress(text.encode("utf-8"), mtime=0)
    return "gzip-base64", base64.b64encode(packed).decode("ascii")


def browser(block: Browser) -> str:
    controls = []
    for flt in block.filters:
        options = "".join(f'<option value="{escape(o)}">{escape(o)}</option>' for o in flt.options)
        controls.append(f'<label>{escape(flt.label)} <select data-key="{escape(flt.key)}"><option value="">all'
                        f"</option>{options}</select></label>")
    controls.append('<input class="search" type="search" placeholder="search text" aria-label="search">')
    encoding, data = browser_data(list(block.items))
    return (f'<div class="browser" id="{escape(block.id)}" data-page-size="{block.page_size}" '
            f'data-empty="{escape(block.empty)}"><h3>{escape(block.title)} ({len(block.items)})</h3>'
            f'<div class="controls">{"".join(controls)}<span class="count"></span></div>'
            '<p class="legend-marks note"><mark class="ins">inserted</mark><mark class="rep">replaced</mark>'
            '<mark class="del">removed</mark><mark class="flag">flagged by a judge</mark> (hover a mark for '
            "details)</p>"
            '<noscript><p class="note">The example browser needs JavaScript.</p></noscript>'
            '<div class="items"></div><div class="pager"><button type="button" class="prev">‹ previous</button>'
            '<span class="page"></span><button type="button" class="next">next ›</button></div>'
            f'<script type="application/json" class="data" data-encoding="{encoding}">{data}</script></div>')


def file_stem(title: str, limit: int = 60) -> str:
    """A file name from a chart's title: lower-case words joined by hyphens (``attack-outcomes-per-run``)."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    stem = ""
    for word in words:
        if stem and len(stem) + 1 + len(word) > limit:
            break
        stem = f"{stem}-{word}" if stem else word[:limit]
    return stem or "chart"


def data_url(text: str, media_type: str) -> str:
    return f"data:{media_type};base64," + base64.b64encode(text.encode("utf-8")).decode("ascii")


def downloads(svg: str, block: BarChart | LineChart) -> str:
    """The chart's download links: the drawing as a standalone SVG file and its numbers as CSV."""
    stem = file_stem(block.title)
    document = '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n"
    return ('<p class="downloads">download '
            f'<a download="{stem}.svg" href="{data_url(document, "image/svg+xml")}">SVG</a> · '
            f'<a download="{stem}.csv" href="{data_url(chart_csv(block), "text/csv;charset=utf-8")}">data (CSV)</a>'
            "</p>")


def block_html(block: Block) -> str:
    if isinstance(block, Table):
        return table(block)
    if isinstance(block, BarChart | LineChart):
        values = block.values.values() if isinstance(block, BarChart) else [n for ln in block.lines for _, n in ln.points]
        if all(num.value is None for num in values):
            return (f'<p class="note">{escape(block.title)}: nothing to draw, every value is undefined (no '
                    "example counted; the tables' n says why).</p>")
        svg = bar_chart(block) if isinstance(block, BarChart) else line_chart(block)
        return (f'<figure class="figure"><figcaption>{escape(block.title)}</figcaption>{svg}'
                f"{downloads(svg, block)}</figure>")

    if isinstance(block, Browser):
        return browser(block)
    if isinstance(block, Details):
        lines = "".join(f"<li>{escape(line)}</li>" for line in block.lines)
        return f"<details><summary>{escape(block.summary)}</summary><ul>{lines}</ul></details>"
    if isinstance(block, Note):
        return f'<p class="{escape(block.css)}">{escape(block.text)}</p>'
    raise TypeError(f"unknown report block {type(block).__name__}")


def section_html(section: Section) -> str:
    intro = f'<p class="intro">{escape(section.intro)}</p>' if section.intro else ""
    body = "".join(block_html(b) for b in section.blocks)
    return f'<section id="{escape(section.id)}"><h2>{escape(section.title)}</h2>{intro}{body}</section>'


def footer_html(cards: list[RunCard], version: str) -> str:
    rows = []
    for card in cards:
        fields = "; ".join(f"{k}: {v}" for k, v in card.fields)
        rows.append(f"<tr><td>{escape(card.path)}</td><td>{escape(card.kind)}</td><td>{escape(fields)}</td></tr>")
    return (f'<footer id="runs"><h2>Runs in this report</h2><table><thead><tr><th>run</th><th>what</th><th>identity'
            f"</th></tr></thead><tbody>{''.join(rows)}</tbody></table><p>Written by robusteval {escape(version)}; "
            "every number comes from the runs' summary.json (or sweep.json, ors.json), shown with its 95% interval "
            "in brackets and its n (the count it is a share of); hover a number for its exact value and run."
            "</p></footer>")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render(report: Report) -> str:
    style, script = asset("report.css"), asset("report.js")
    policy = (f"default-src 'none'; style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
              "img-src data:; base-uri 'none'; form-action 'none'")
    nav = "".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in report.sections)
    body = "".join(section_html(s) for s in report.sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(report.title)}</title><style>{style}</style></head><body>"
            f"<header><h1>{escape(report.title)}</h1><p>{len(report.runs)} run(s); {len(report.sections)} section(s)"
            f'</p><nav>{nav}<a href="#runs">Runs</a></nav></header>'
            f"<main>{body}</main>{footer_html(report.runs, report.version)}<script>{script}</script></body></html>\n")
