"""``runs compare --format latex``: booktabs tables a paper can paste, every rate as ``value [lo, hi]`` with its n.

MATCHA comes in the paper's layouts, from the report's own tables (:mod:`robusteval.report.matcha`): Table 1/2
(ACC, UR, SR, WR per model x dataset; one table per group of comparable runs, as the leaderboards group them)
and Table 3 (the baselines beside the full attack); every other method as its leaderboards. The document needs
``\\usepackage{booktabs}``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from robusteval.metrics.matcha_summary import counting, flag_texts
from robusteval.report import matcha
from robusteval.report.collect import MATCHA, Inputs, collect, nothing_to_show
from robusteval.report.comparability import comparability_key, key_hash
from robusteval.report.compare import (
    DEFAULT_MAX_WIDTH,
    DEFAULT_MIN_N,
    HEADINGS,
    Leaderboard,
    check_thresholds,
    leaderboards,
)
from robusteval.report.model import Cell, Num, Table
from robusteval.runs import Run

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (run paths and model names carry ``_`` and ``%``)."""
    return "".join(_SPECIAL.get(char, char) for char in text)


def cell(value: Cell) -> str:
    """A number as ``12.5 [4.1, 29.0] \\scriptsize{n=40}`` (percent numbers x100; mean (std) over repeats)."""
    if not isinstance(value, Num):
        return escape(value)
    if value.value is None:
        return "--" + (f" {{\\scriptsize n={value.n}}}" if value.n is not None else "")
    scale = 100.0 if value.percent else 1.0
    text = f"{value.value * scale:.{value.digits}f}"
    if value.std is not None:
        text += f" ({value.std * scale:.{value.digits}f})"
    if value.ci is not None and len(value.ci) == 2 and None not in value.ci:
        text += f" [{value.ci[0] * scale:.{value.digits}f}, {value.ci[1] * scale:.{value.digits}f}]"
    if value.n is not None:
        text += f" {{\\scriptsize n={value.n}}}"
    if value.flags:  # a rate resting on a weak check: the caption says which (see matcha_tables)
        text += r"$^{\dagger}$"
    return text


def table(caption: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]],
          groups: Sequence[tuple[str, int]] = (), note: str = "") -> str:
    """One booktabs ``table`` environment (``groups``: a first header row of (label, columns spanned))."""
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * (len(columns) - 1) + "}", r"\toprule"]
    if groups:
        spans, rules, at = [], [], 1
        for label, width in groups:
            spans.append(f"\\multicolumn{{{width}}}{{c}}{{{escape(label)}}}" if width > 1 else escape(label))
            if label:
                rules.append(f"\\cmidrule(lr){{{at}-{at + width - 1}}}")
            at += width
        lines += [" & ".join(spans) + r" \\", " ".join(rules)]
    lines += [" & ".join(escape(c) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(cell(c) for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    caption_text = escape(caption.rstrip(".")) + "." + (f" {escape(note)}" if note else "")
    lines += [f"\\caption{{{caption_text}}}", r"\end{table}"]
    return "\n".join(lines)


def report_table(block: Table, note: str = "") -> str:
    return table(block.caption, block.columns, block.rows, block.groups, note or block.note)


def board_table(board: Leaderboard) -> str:
    columns = board.shown
    note = f"Comparability key {board.group}." + (f" {board.apart[0].upper()}{board.apart[1:]}." if board.apart
                                                  else "")
    return table(board.title, [HEADINGS.get(c, c) for c in columns],
                 [[row.get(c, "") for c in columns] for row in board.rows], note=note)


def matcha_tables(inputs: Inputs) -> list[str]:
    """Table 1/2 per group of comparable MATCHA runs (full attack), then Table 3 when baselines were run."""
    direct = [run for run in inputs.of(MATCHA) if run.summary]
    groups: dict[str, list[Run]] = {}
    for run in direct:
        groups.setdefault(key_hash(comparability_key(run)), []).append(run)
    out = []
    for group, runs in groups.items():
        rule = (runs[0].summary or {}).get("success_check") or "final"
        flags = sorted({text for run in runs for text in flag_texts(run.summary or {})})
        note = (f"Comparability key {group}; success rule {rule}; counting {counting(runs[0].summary or {})}. Each "
                "cell: value [95% interval], n (ACC: all questions; UR/SR/WR: n_rated)."
                + (f" Rates marked \u2020: {'; '.join(flags)}." if flags else ""))
        out += [report_table(block, note) for block in matcha.results_tables(runs)]
    baselines = matcha.baselines_table(inputs.all_runs(MATCHA))
    if isinstance(baselines, Table):
        out.append(report_table(baselines))
    return out


def compare_latex(paths: Sequence[str | os.PathLike[str]], *, max_width: float = DEFAULT_MAX_WIDTH,
                  min_n: int = DEFAULT_MIN_N) -> str:
    """The LaTeX of ``runs compare --format latex``: MATCHA in the paper's layouts, every other method's
    leaderboards (see the module docstring)."""
    check_thresholds(max_width, min_n)
    inputs = collect(paths)
    boards = leaderboards(inputs, max_width=max_width, min_n=min_n)
    if not boards:
        raise nothing_to_show(inputs, "runs compare: nothing to rank")
    parts = [r"% robusteval runs compare --format latex; needs \usepackage{booktabs}"]
    parts += matcha_tables(inputs)
    parts += [board_table(board) for board in boards if board.method != "matcha"]
    return "\n\n".join(parts) + "\n"
