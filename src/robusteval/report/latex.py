"""``runs compare --format latex``: booktabs tables a paper can paste, every rate as ``value [lo, hi]`` with its n.

MATCHA comes in the paper's layouts, from the report's own tables (:mod:`robusteval.report.matcha`): Table 1/2
(ACC, UR, SR, WR per model x dataset; one table per group of comparable runs, as the leaderboards group them)
and Table 3 (the baselines beside the full attack); every other method as its leaderboards. The document needs
``\\usepackage{booktabs}``.

Every table has a ``\\label{tab:...}`` (from its caption, unique in the file). Captions say only what a reader
needs; what identifies the runs for robusteval (the comparability key, how a group differs from the others, the
paper layout a table follows) goes in ``%`` comments above the table. Models are named as the study names them
when a study directory is exported (``runs compare STUDY_DIR``), else by their readable name; ``rename`` (``--rename
OLD=NEW``) names them as the paper does. ``digits`` (``--digits N``) sets the decimals of every number.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from robusteval.errors import UserError
from robusteval.metrics.formatting import NO_INTERVAL, format_bounds
from robusteval.metrics.matcha_summary import counting, flag_texts, rates_over
from robusteval.metrics.stats import is_collapsed
from robusteval.report import matcha
from robusteval.report.collect import MATCHA, Inputs, collect, model_name, nothing_to_show
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


#: A study directory's state file: ``robusteval.studies.study.STATE_NAME`` (a layer above the report: not
#: imported; tests/report/test_latex_export.py holds them equal).
STUDY_STATE = "study.json"
#: The decimals ``--digits`` may ask for.
MAX_DIGITS = 6
#: "(paper Table 1 layout)" in a report caption: for robusteval's reader, not the paper's (a comment here).
_LAYOUT = re.compile(r"\s*\((paper Table [^)]*layout)\)")


def cell(value: Cell, *, digits: int | None = None, rename: Mapping[str, str] | None = None) -> str:
    """A number as ``12.5 [4.1, 29.0] \\scriptsize{n=40}`` (percent numbers x100; mean (std) over repeats), with
    ``digits`` decimals when given (else the number's own); text renamed (:func:`renamed`) and escaped."""
    if not isinstance(value, Num):
        return escape(renamed(value, rename))
    if value.value is None:
        return "--" + (f" {{\\scriptsize n={value.n}}}" if value.n is not None else "")
    scale = 100.0 if value.percent else 1.0
    places = value.digits if digits is None else digits
    text = f"{value.value * scale:.{places}f}"
    if value.std is not None:
        text += f" ({value.std * scale:.{places}f})"
    interval = value.interval()
    if interval is not None:  # never a point: [n too small], or more digits where rounding would meet
        low, high = interval
        text += " " + (NO_INTERVAL if is_collapsed(interval) else format_bounds(low * scale, high * scale, places))
    if value.n is not None:
        text += f" {{\\scriptsize n={value.n}}}"
    if value.flags:  # a rate resting on a weak check: the caption says which (see matcha_tables)
        text += r"$^{\dagger}$"
    return text


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


def table(caption: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]],
          groups: Sequence[tuple[str, int]] = (), note: str = "", *, label: str = "",
          comments: Sequence[str] = (), digits: int | None = None, rename: Mapping[str, str] | None = None) -> str:
    """One booktabs ``table`` environment (``groups``: a first header row of (label, columns spanned)), with
    ``comments`` as ``%`` lines above it and its ``\\label``."""
    lines = [f"% {' '.join(comment.split())}" for comment in comments if comment]
    lines += [r"\begin{table}[t]", r"\centering", r"\small",
              r"\begin{tabular}{l" + "r" * (len(columns) - 1) + "}", r"\toprule"]
    if groups:
        spans, rules, at = [], [], 1
        for group, width in groups:
            text = escape(renamed(group, rename))
            spans.append(f"\\multicolumn{{{width}}}{{c}}{{{text}}}" if width > 1 else text)
            if group:
                rules.append(f"\\cmidrule(lr){{{at}-{at + width - 1}}}")
            at += width
        lines += [" & ".join(spans) + r" \\", " ".join(rules)]
    lines += [" & ".join(escape(renamed(c, rename)) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(cell(c, digits=digits, rename=rename) for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    caption_text = escape(caption.rstrip(".")) + "." + (f" {escape(note)}" if note else "")
    lines += [f"\\caption{{{caption_text}}}"] + ([f"\\label{{{label}}}"] if label else []) + [r"\end{table}"]
    return "\n".join(lines)


class _Writer:
    """The options every table of one export shares, and the labels already given."""

    def __init__(self, digits: int | None, rename: Mapping[str, str]) -> None:
        self.digits, self.rename, self.labels = digits, dict(rename), set[str]()

    def table(self, caption: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]],
              groups: Sequence[tuple[str, int]] = (), note: str = "", comments: Sequence[str] = ()) -> str:
        layout = [m.group(1) for m in _LAYOUT.finditer(caption)]  # "paper Table 1 layout"
        caption = _LAYOUT.sub("", caption)
        return table(caption, columns, rows, groups, note, label=label_of(caption, self.labels),
                     comments=[*comments, *layout], digits=self.digits, rename=self.rename)

    def report_table(self, block: Table, note: str = "", comments: Sequence[str] = ()) -> str:
        return self.table(block.caption, block.columns, block.rows, block.groups, note or block.note, comments)

    def board_table(self, board: Leaderboard) -> str:
        columns = board.shown
        comments = [f"comparability key {board.group}"] + ([f"apart from the method's other groups: {board.apart}"]
                                                           if board.apart else [])
        return self.table(board.title, [HEADINGS.get(c, c) for c in columns],
                          [[row.get(c, "") for c in columns] for row in board.rows], comments=comments)


def report_table(block: Table, note: str = "") -> str:
    return _Writer(None, {}).report_table(block, note)


def board_table(board: Leaderboard) -> str:
    return _Writer(None, {}).board_table(board)


def matcha_tables(inputs: Inputs, writer: _Writer | None = None) -> list[str]:
    """Table 1/2 per group of comparable MATCHA runs (full attack), then Table 3 when baselines were run."""
    writer = writer or _Writer(None, {})
    direct = [run for run in inputs.of(MATCHA) if run.summary]
    groups: dict[str, list[Run]] = {}
    for run in direct:
        groups.setdefault(key_hash(comparability_key(run)), []).append(run)
    out = []
    for group, runs in groups.items():
        rule = (runs[0].summary or {}).get("success_check") or "final"
        flags = sorted({text for run in runs for text in flag_texts(run.summary or {})})
        over = sorted({rates_over(run.summary or {}) for run in runs})
        note = (f"Success rule {rule}; counting {counting(runs[0].summary or {})}. Each cell: value [95% interval], "
                "n (ACC: all questions; UR/SR/WR, unjudged and clean wrong: every attacked question, n_attacked, "
                "whose categories sum to 100%" + ("; runs made before: UR/SR/WR over the judged ones only, "
                                                   "n_rated" if "n_rated" in over else "") + ")."
                + (f" Rates marked \u2020: {'; '.join(flags)}." if flags else ""))
        out += [writer.report_table(block, note, comments=[f"comparability key {group}"])
                for block in matcha.results_tables(runs)]
    baselines = matcha.baselines_table(inputs.all_runs(MATCHA))
    if isinstance(baselines, Table):
        out.append(writer.report_table(baselines))
    return out


def study_names(paths: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """Model display name -> the study's name for it, for every study directory among ``paths`` (its
    ``study.json``; a cell's run is ``<study>/<model>/<method>/<dataset>``). A display name two study models share
    is left out: renaming it would merge them."""
    from robusteval.runs import load_run

    found: dict[str, set[str]] = {}
    for path in paths:
        state = Path(path) / STUDY_STATE
        if not state.is_file():
            continue
        try:
            data = json.loads(state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not readable as a study: its runs keep their own names
        for entry in data.get("cells") or []:
            if not isinstance(entry, dict) or entry.get("status") not in ("done", "skipped"):
                continue
            study_model = str(entry.get("cell", "")).split("/", 1)[0]
            run_path = Path(path) / str(entry.get("cell", ""))
            try:
                shown = model_name(load_run(run_path))
            except UserError:
                continue
            found.setdefault(shown, set()).add(study_model)
    return {shown: next(iter(names)) for shown, names in found.items() if len(names) == 1 and shown not in names}


def parse_renames(pairs: Sequence[str]) -> dict[str, str]:
    """``["OLD=NEW", ...]`` (``--rename``) as a mapping; a pair without ``=`` or with an empty side is a one-line
    UserError."""
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise UserError(f"--rename {pair!r}: expected OLD=NEW (a model's name as the table shows it, then "
                            "the name to print)")
        out[old.strip()] = new.strip()
    return out


def check_digits(digits: int | None) -> None:
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                               or not 0 <= digits <= MAX_DIGITS):
        raise UserError(f"--digits {digits}: give a whole number from 0 to {MAX_DIGITS}")


def compare_latex(paths: Sequence[str | os.PathLike[str]], *, max_width: float = DEFAULT_MAX_WIDTH,
                  min_n: int = DEFAULT_MIN_N, digits: int | None = None,
                  rename: Mapping[str, str] | None = None) -> str:
    """The LaTeX of ``runs compare --format latex``: MATCHA in the paper's layouts, every other method's
    leaderboards (see the module docstring). Models are named as a study among ``paths`` names them
    (:func:`study_names`), then as ``rename`` says (old: the study's name or the name shown without it; it
    wins); ``digits``: decimals of every number."""
    check_thresholds(max_width, min_n)
    check_digits(digits)
    given = dict(rename or {})
    # A study's name for a model may itself be renamed ("--rename bars-tiny=Bars"), as may the name shown.
    names = {shown: given.get(named, named) for shown, named in study_names(paths).items()} | given
    inputs = collect(paths)
    boards = leaderboards(inputs, max_width=max_width, min_n=min_n)
    if not boards:
        raise nothing_to_show(inputs, "runs compare: nothing to rank")
    writer = _Writer(digits, names)
    parts = [r"% robusteval runs compare --format latex; needs \usepackage{booktabs}"]
    if names:
        parts[0] += "\n% models renamed: " + "; ".join(f"{old} -> {new}" for old, new in names.items())
    parts += matcha_tables(inputs, writer)
    parts += [writer.board_table(board) for board in boards if board.method != "matcha"]
    return "\n\n".join(parts) + "\n"
