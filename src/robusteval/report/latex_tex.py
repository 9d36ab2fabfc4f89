"""The TeX side of ``runs compare --format latex``: escaping, cells, where each number's n goes, and a width that
fits the page.

A :class:`TexTable` is a paper's table before it is written: a caption (plain text), headings, rows of cells
(:class:`~robusteval.report.model.Num` or text), how many leading key columns a split repeats, and optional
header groups. :func:`render` writes it as booktabs LaTeX that compiles with nothing but ``\\usepackage{booktabs}``:

* every user string is escaped (``_ % & # $ { } ~ ^ \\ < > | [ ]``; Greek letters and other symbols as math,
  accented letters as accent commands, anything else as its code point), so a model called ``m_1 (50%)`` or
  ``模型`` compiles;
* a number reads ``45.0 {\\scriptsize[38.1, 52.2]}``; its n sits in a count column of the table when one holds
  it, in the heading when every row shares it, else in an ``n`` column inserted before it;
* a flagged number marks its row's first cell with a footnote symbol (once per row), the flags in the caption;
* the width is estimated from the text (:func:`width_pt`): a single-column ``table`` when it fits a column of a
  two-column paper, ``table*`` when it fits the page, ``table*`` in ``\\footnotesize`` with narrower column gaps,
  else the table is split into parts that each fit, the key columns repeated.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from robusteval.metrics.formatting import format_bounds
from robusteval.metrics.stats import is_collapsed
from robusteval.report.model import Cell, Num


class Tex(str):
    """Text that is already LaTeX (a heading such as ``$\\alpha$``): written as is, never escaped."""


Heading = str | Tex

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
            ">": r"\textgreater{}", "|": r"\textbar{}", "[": "{[}", "]": "{]}", "\n": " ", "\t": " "}
#: Non-ASCII characters the export writes (and a model or dataset name may hold) that plain pdflatex has a
#: command for.
_UNICODE = {"α": r"$\alpha$", "β": r"$\beta$", "γ": r"$\gamma$", "δ": r"$\delta$", "ε": r"$\epsilon$",
            "θ": r"$\theta$", "λ": r"$\lambda$", "μ": r"$\mu$", "π": r"$\pi$", "σ": r"$\sigma$", "τ": r"$\tau$",
            "Δ": r"$\Delta$", "·": r"$\cdot$", "×": r"$\times$", "±": r"$\pm$", "≤": r"$\leq$", "≥": r"$\geq$",
            "≠": r"$\neq$", "≈": r"$\approx$", "→": r"$\rightarrow$", "←": r"$\leftarrow$", "−": "--",
            "–": "--", "—": "---", "…": r"\ldots{}", "†": r"$\dagger$", "‡": r"$\ddagger$", "⚑": r"$\dagger$",
            "§": r"\S{}", "¶": r"\P{}", "°": r"$^\circ$", "“": "``", "”": "''", "‘": "`", "’": "'",
            "\u00a0": "~", "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ø": r"\o{}", "Ø": r"\O{}",
            "œ": r"\oe{}", "Œ": r"\OE{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}", "¿": r"?`", "¡": r"!`"}
_ACCENTS = {"\u0301": "'", "\u0300": "`", "\u0302": "^", "\u0308": '"', "\u0303": "~", "\u0304": "=",
            "\u0327": "c", "\u030a": "r", "\u030c": "v", "\u0306": "u", "\u0307": ".", "\u030b": "H",
            "\u0328": "k"}


def _unicode(char: str) -> str:
    if char in _UNICODE:
        return _UNICODE[char]
    decomposed = unicodedata.normalize("NFD", char)
    base, marks = decomposed[0], decomposed[1:]
    if base.isascii() and base.isalpha() and len(marks) == 1 and marks[0] in _ACCENTS:
        return f"\\{_ACCENTS[marks[0]]}{{{base}}}"
    return f"\\texttt{{[U+{ord(char):04X}]}}"  # no glyph in plain pdflatex: the code point, readable


def escape(text: str) -> str:
    """``text`` as LaTeX that plain pdflatex sets: special characters escaped, non-ASCII characters as
    commands (see the module docstring)."""
    return "".join(_SPECIAL.get(c, c) if c.isascii() else _unicode(c) for c in str(text))


def heading_tex(heading: Heading) -> str:
    return heading if isinstance(heading, Tex) else escape(heading)


#: Footnote symbols for flags, in order of first appearance.
SYMBOLS = (r"\dagger", r"\ddagger", r"\S", r"\P", r"\|", r"\dagger\dagger", r"\ddagger\ddagger")


@dataclass(frozen=True)
class TexTable:
    caption: str  # plain text, escaped when written (a :class:`Tex` as is)
    columns: Sequence[Heading]
    rows: Sequence[Sequence[Cell]]
    keys: int = 1  # leading columns a split repeats (the row's name)
    #: an optional header row over the non-key columns: (label, columns spanned); a split keeps each whole
    groups: Sequence[tuple[str, int]] = ()
    notes: Sequence[str] = ()  # caption sentences after the caption (plain text)
    comments: Sequence[str] = ()  # ``%`` lines above the table
    tex_notes: Sequence[str] = ()  # caption sentences already in LaTeX (a \\ref)


@dataclass
class Style:
    """What every table of one export shares."""

    digits: int | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    labels: set[str] = field(default_factory=set)


def renamed(text: str, rename: Mapping[str, str] | None) -> str:
    """``text`` with a model's name replaced: the whole text, or its start before " · " or " (" (a row label
    such as "llama-3-8b · authors' counting")."""
    if not rename:
        return text
    if text in rename:
        return rename[text]
    for old, new in rename.items():
        for joint in (" · ", " ("):
            if text.startswith(old + joint):
                return new + text[len(old):]
    return text


def label_of(caption: str, taken: set[str]) -> str:
    """``tab:token-level-attack``: the caption's first words (before a colon or a parenthesis) as a label, made
    unique among ``taken`` (which it joins) with ``-2``, ``-3``..."""
    head = re.split(r"[:(.]", caption, maxsplit=1)[0]
    slug = "-".join(re.findall(r"[a-z0-9]+", head.lower())[:6]) or "table"
    label, k = f"tab:{slug}", 2
    while label in taken:
        label, k = f"tab:{slug}-{k}", k + 1
    taken.add(label)
    return label


def number(value: Num, digits: int | None = None) -> str:
    """``45.0 {\\scriptsize[38.1, 52.2]}`` (percent numbers x100; ``mean (std)`` over repeats; ``--`` for no
    value), never a zero-width interval, without n (see :func:`place_n`)."""
    if value.value is None:
        return "--"
    scale = 100.0 if value.percent else 1.0
    places = value.digits if digits is None else digits
    text = f"{value.value * scale:.{places}f}"
    if value.std is not None:
        text += f" ({value.std * scale:.{places}f})"
    interval = value.interval()
    if interval is not None:
        low, high = interval
        shown = "[n too small]" if is_collapsed(interval) else format_bounds(low * scale, high * scale, places)
        text += f" {{\\scriptsize{shown}}}"
    return text


def _n_of(cell: Cell) -> str | None:
    if not isinstance(cell, Num) or (cell.value is None and cell.n is None):
        return None
    if cell.n is not None:
        return str(cell.n)
    return cell.basis or None


def _is_count(table: TexTable, j: int) -> bool:
    values = [row[j] for row in table.rows]
    return bool(values) and all(isinstance(v, str) and (v.isdigit() or v in ("", "?", "-")) for v in values) \
        and any(isinstance(v, str) and v.isdigit() for v in values)


def place_n(table: TexTable) -> TexTable:
    """``table`` with each number's n where a reader finds it: a count column already holding it, the heading
    when every row has the same n, else an ``n`` column inserted before the number (one for adjacent numbers
    over the same n). Where every number of the table has one n, the caption says it instead."""
    numbers = [j for j in range(len(table.columns)) if any(isinstance(row[j], Num) for row in table.rows)]
    vectors = {j: [_n_of(row[j]) for row in table.rows] for j in numbers}
    counts = {j: [str(row[j]) for row in table.rows] for j in range(len(table.columns)) if _is_count(table, j)}
    notes, columns = list(table.notes), list(table.columns)
    shared = {tuple(v) for v in vectors.values() if any(v)}
    one = len(shared) == 1 and len(set(next(iter(shared)))) == 1 and None not in next(iter(shared))
    inserted: dict[int, list[str | None]] = {}  # column index -> its n column's values (inserted before it)
    previous: list[str | None] | None = None
    uncovered = False
    for j in numbers:
        vector = vectors[j]
        present = [(n, i) for i, n in enumerate(vector) if n is not None]
        if not present:
            previous = None
            continue
        if any(all(counts[k][i] == n for n, i in present) for k in counts):
            previous = None
            continue
        uncovered = True
        if one:
            continue
        if len({n for n, _ in present}) == 1 and len(table.rows) > 1:
            columns[j] = Tex(heading_tex(columns[j]) + f" {{\\scriptsize($n$={escape(present[0][0])})}}")
            previous = None
            continue
        if vector != previous:
            inserted[j] = vector
        previous = vector
    if one and uncovered:
        notes.append(f"n = {next(iter(shared))[0]} for every number.")
    if not inserted:
        return replace(table, columns=columns, notes=notes)
    new_columns: list[Heading] = []
    rows: list[list[Cell]] = [[] for _ in table.rows]
    for j, heading in enumerate(columns):
        if j in inserted:
            new_columns.append(Tex("$n$"))
            for i, row in enumerate(rows):
                row.append(inserted[j][i] or "")
        new_columns.append(heading)
        for i, row in enumerate(rows):
            row.append(table.rows[i][j])
    groups, at = [], table.keys
    for label, width in table.groups:  # each header group spans the n columns that went into it
        groups.append((label, width + sum(1 for j in inserted if at <= j < at + width)))
        at += width
    return replace(table, columns=new_columns, rows=rows, notes=notes, groups=groups)


def flags_marked(table: TexTable, rename: Mapping[str, str] | None = None) -> TexTable:
    """Each row's flags (its numbers' ``flags``) as footnote symbols on its first cell, once per row, with the
    legend in the caption."""
    order: list[str] = []
    marked = []
    for row in table.rows:
        flags = list(dict.fromkeys(f for cell in row if isinstance(cell, Num) for f in cell.flags))
        order += [f for f in flags if f not in order]
        marked.append((row, flags))
    if not order:
        return table
    symbol = {flag: SYMBOLS[min(i, len(SYMBOLS) - 1)] for i, flag in enumerate(order)}
    rows = [[Tex(escape(renamed(str(row[0]), rename)) + "$^{" + "".join(symbol[f] for f in flags) + "}$") if flags else row[0],
             *row[1:]] for row, flags in marked]
    legend = "; ".join(f"${symbol[f]}$ {escape(f)}" for f in order)
    return replace(table, rows=rows, tex_notes=[*table.tex_notes, f"Flagged rows: {legend}."])


# Width: pdflatex's Computer Modern at \small sets a digit 4.6pt wide, a lower-case letter 4.5pt, a capital up to
# 6.6pt; \scriptsize (7pt) a digit 4pt. A column of a two-column paper is 219-252pt (article: 229.5pt), its page
# 455-516pt (article: 469pt). The estimate errs wide.
COLUMN_PT, PAGE_PT = 222.0, 455.0
_SCRIPT = re.compile(r"\{\\scriptsize\s*(.*?)\}")


def width_pt(tex: str, scale: float = 1.0) -> float:
    """An upper estimate of the width of ``tex`` (one cell) in points at ``\\small`` (``scale`` for smaller)."""
    script = sum(len(_plain(m)) for m in _SCRIPT.findall(tex))
    rest = _plain(_SCRIPT.sub("", tex))
    return (len(rest) * 4.7 + len(re.findall(r"\\[a-zA-Z]+", _SCRIPT.sub("", tex))) * 1.5) * scale + script * 3.1


def _plain(tex: str) -> str:
    return re.sub(r"[{}$^_]", "", re.sub(r"\\[a-zA-Z]+\*?|\\.", "x", tex))


def _cell_tex(cell: Cell, style: Style, first: bool) -> str:
    if isinstance(cell, Num):
        return number(cell, style.digits)
    if isinstance(cell, Tex):
        return cell
    return escape(renamed(cell, style.rename) if first else cell)


def _widths(table: TexTable, style: Style, scale: float, gap: float) -> list[float]:
    out = []
    for j, heading in enumerate(table.columns):
        cells = [_cell_tex(row[j], style, j < table.keys) for row in table.rows]
        out.append(max([width_pt(heading_tex(heading), scale), *(width_pt(c, scale) for c in cells)]) + gap)
    return out


def _parts(table: TexTable, style: Style) -> list[tuple[TexTable, str, str]]:
    """``table`` as (part, environment, size) that each fit: see the module docstring."""
    for env, size, scale, gap, limit in (("table", "small", 1.0, 12.0, COLUMN_PT),
                                         ("table*", "small", 1.0, 12.0, PAGE_PT),
                                         ("table*", "footnotesize", 0.92, 8.0, PAGE_PT)):
        if sum(_widths(table, style, scale, gap)) <= limit:
            return [(table, env, size)]
    widths = _widths(table, style, 0.92, 8.0)
    blocks = _blocks(table)
    parts: list[list[int]] = [[]]
    key_width = sum(widths[: table.keys])
    for block in blocks:
        used = key_width + sum(widths[j] for j in parts[-1])
        if parts[-1] and used + sum(widths[j] for j in block) > PAGE_PT:
            parts.append([])
        parts[-1].extend(block)
    out = []
    for i, chosen in enumerate(parts, 1):
        keep = [*range(table.keys), *chosen]
        groups = _groups_of(table, chosen)
        suffix = f" (part {i} of {len(parts)})"
        caption = (Tex(table.caption.rstrip(".") + suffix) if isinstance(table.caption, Tex)
                   else table.caption.rstrip(".") + suffix)
        part = replace(table, caption=caption,
                       columns=[table.columns[j] for j in keep], rows=[[row[j] for j in keep] for row in table.rows],
                       groups=groups)
        out.append((part, "table*", "footnotesize"))
    return out


def _blocks(table: TexTable) -> list[list[int]]:
    """The non-key columns in the blocks a split keeps together: each header group, else each column with an
    ``n`` column before it joined to it."""
    columns = list(range(table.keys, len(table.columns)))
    if table.groups:
        out, at = [], table.keys
        for _, width in table.groups:
            out.append(list(range(at, at + width)))
            at += width
        return [b for b in out if b]
    out = []
    for j in columns:
        if out and table.columns[j - 1] == Tex("$n$") and out[-1][-1] == j - 1:
            out[-1].append(j)
        else:
            out.append([j])
    return out


def _groups_of(table: TexTable, chosen: Sequence[int]) -> list[tuple[str, int]]:
    if not table.groups:
        return []
    out, at = [], table.keys
    for label, width in table.groups:
        kept = sum(1 for j in range(at, at + width) if j in chosen)
        if kept:
            out.append((label, kept))
        at += width
    return out


def _align(table: TexTable, j: int) -> str:
    if j < table.keys:
        return "l"
    numeric = [row[j] for row in table.rows if row[j] != ""]
    return "r" if numeric and all(isinstance(c, Num) or str(c).replace(".", "", 1).isdigit() for c in numeric) \
        else "l"


def render(table: TexTable, style: Style) -> str:
    """``table`` as one or more booktabs table environments (each with its ``\\label``)."""
    table = flags_marked(place_n(table), style.rename)
    return "\n\n".join(_environment(part, env, size, style) for part, env, size in _parts(table, style))


def _environment(table: TexTable, env: str, size: str, style: Style) -> str:
    lines = [f"% {' '.join(comment.split())}" for comment in table.comments if comment]
    lines += [f"\\begin{{{env}}}[t]", r"\centering", f"\\{size}"]
    if size != "small":
        lines.append(r"\setlength{\tabcolsep}{4pt}")
    lines += [r"\begin{tabular}{" + "".join(_align(table, j) for j in range(len(table.columns))) + "}", r"\toprule"]
    if table.groups:
        spans, rules, at = [""] * table.keys, [], table.keys + 1
        for group, width in table.groups:
            text = escape(renamed(group, style.rename))
            spans.append(f"\\multicolumn{{{width}}}{{c}}{{{text}}}" if width > 1 else text)
            if group:
                rules.append(f"\\cmidrule(lr){{{at}-{at + width - 1}}}")
            at += width
        lines += [" & ".join(spans) + r" \\"] + ([" ".join(rules)] if rules else [])
    lines += [" & ".join(heading_tex(c) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_cell_tex(c, style, j < table.keys) for j, c in enumerate(row)) + r" \\"
              for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    notes = " ".join([escape(n) for n in table.notes] + list(table.tex_notes))
    label = label_of(table.caption, style.labels)
    caption = heading_tex(table.caption).rstrip(".")
    lines += [f"\\caption{{{caption}." + (f" {notes}" if notes else "") + "}",
              f"\\label{{{label}}}", f"\\end{{{env}}}"]
    return "\n".join(lines)
