"""Each method's paper tables for ``runs compare --format latex`` (as :class:`~robusteval.report.latex_tex.TexTable`).

* A method whose results give paper tables of their own (:attr:`MethodResults.latex
  <robusteval.report.method_results.MethodResults.latex>`, e.g. MATCHA's Tables 1-3) shows those instead.
* Every other method: its leaderboards, rows best first. What every row shares (the dataset, the sets, the label
  mode, β) is said in the caption, not repeated in a column; the rank order and why a row is not ranked too. A
  leaderboard kind may add notes and tables of its own (``Board.tex``: one column per set or category).
* The pairwise tests of every leaderboard: the difference with its interval, n, the test, p and Holm's p (bold
  where the pair differs).
"""

from __future__ import annotations

from collections.abc import Sequence

from robusteval.metrics.formatting import NO_INTERVAL
from robusteval.report.collect import Inputs
from robusteval.report.compare import HEADINGS, UNRANKED, Leaderboard, all_boards
from robusteval.report.latex_tex import Heading, Tex, TexTable
from robusteval.report.method_results import merged
from robusteval.report.model import Cell, Num
from robusteval.report.pairing import Comparison, p_text

#: Leaderboard columns a paper's table never shows: the rank (rows are in rank order; the caption says so), why a
#: row is not ranked (the caption), the run's directory, and its flags (the notes); a leaderboard kind hides more
#: of its own (``Board.tex_hidden``).
HIDDEN = frozenset({"rank", UNRANKED, "run", "flags"})
#: Headings in LaTeX where the terminal's would read badly, of the columns every method shares (a method's own:
#: ``MethodResults.tex_headings``).
TEX_HEADINGS: dict[str, Heading] = {"n": Tex("$n$"), "model": "Model", "dataset": "Dataset", "method": "Method"}


def heading(column: str) -> Heading:
    if column in TEX_HEADINGS:
        return TEX_HEADINGS[column]
    own = merged(lambda results: results.tex_headings)
    if column in own:
        return own[column]
    return HEADINGS.get(column, column).replace(" %", " (%)")




# ----------------------------------------------------------------------------------------------- leaderboards

def board_tables(board: Leaderboard, inputs: Inputs) -> list[TexTable]:
    """``board`` as a paper's table (rows best first), with its per-set or per-category table where it has one
    (its kind's ``tex``)."""
    kind = next((b for b in all_boards() if b.method == board.method), None)
    hidden = HIDDEN | (kind.tex_hidden if kind is not None else frozenset())
    columns = [c for c in board.shown if c not in hidden and not c.startswith("share_")]
    rows = list(board.rows)
    notes: list[str] = []
    for column in [c for c in columns if c != "model"]:
        values = {str(row.get(column, "")) for row in rows}
        if not any(isinstance(row.get(column), Num) for row in rows) and len(values) == 1 and not _count(column):
            name = merged(lambda results: results.tex_note_names).get(column, HEADINGS.get(column, column))
            notes.append(f"{name}: {next(iter(values))}.")
            columns.remove(column)
    title, _, order = board.title.partition(": ")
    unranked = [f"{row['model']} ({row[UNRANKED]})" for row in rows if row.get(UNRANKED)]
    notes.insert(0, f"Rows ranked: {order.split(' (comparable group')[0]}."
                 + (f" Not ranked: {'; '.join(unranked)}." if unranked else ""))
    notes.append("Each number: value [95% interval].")
    group = board.title[len(title):].partition(" (comparable group")[2]
    caption = title + (f" (comparable group{group}" if group else "")
    comments = [f"comparability key {board.group}", *([board.apart] if board.apart else [])]
    main = TexTable(caption, [heading(c) for c in columns], [[row.get(c, "") for c in columns] for row in rows],
                    notes=notes, comments=comments)
    return kind.tex(board, inputs, main) if kind is not None and kind.tex is not None else [main]


def _count(column: str) -> bool:
    return column == "n" or column.startswith("n_")


# ---------------------------------------------------------------------------------------------- pairwise tests

_TESTS = {"McNemar exact": "McNemar (exact)", "McNemar chi-square": r"McNemar ($\chi^2$)",
          "paired bootstrap": "paired bootstrap"}


def pairwise_table(comparisons: Sequence[Comparison], caption: str, names: dict[str, str] | None = None
                   ) -> TexTable:
    """The pairwise tests as a paper's table: the number, the pair, A - B with its interval (points for
    percentages), the shared examples n, the test, p and Holm's p (bold where the pair differs)."""
    names = names or {}
    rows: list[list[Cell]] = []
    untested: dict[str, list[str]] = {}  # why -> the numbers and pairs
    for c in comparisons:
        test = c.test
        difference: Cell = "--"
        if test.difference is not None:
            scale = 100.0 if c.percent else 1.0
            shown = _signed(f"{test.difference * scale:+.1f}")
            if test.ci95 is not None:
                low, high = (_signed(f"{v * scale:.1f}") for v in test.ci95)
                shown += f" {{\\scriptsize[{low}, {high}]}}"
            else:  # a difference with no interval (the paired bootstrap never varied) is never shown bare
                shown += f" {{\\scriptsize{NO_INTERVAL}}}"
            difference = Tex(shown)
        if test.status != "tested" and test.note:
            who = f"{names.get(c.model_a, c.model_a)} vs {names.get(c.model_b, c.model_b)}"
            untested.setdefault(f"{test.status}: {test.note}", []).append(f"{c.label or c.column} ({who})")
        holm = _p(test.p_holm)
        rows.append([c.label or c.column, names.get(c.model_a, c.model_a), names.get(c.model_b, c.model_b),
                     difference, str(test.n) if test.n else "",
                     Tex(_TESTS.get(test.test, test.test)) if test.status == "tested" else test.status,
                     _p(test.p), Tex(f"\\textbf{{{holm}}}") if test.significant else holm])
    columns: list[Heading] = ["Number", "A", "B", Tex("A $-$ B"), Tex("$n$"), "Test", Tex("$p$"),
                              Tex(r"$p_{\mathrm{Holm}}$")]
    pair = {(str(row[1]), str(row[2])) for row in rows}
    lead: list[str] = []
    if len(pair) == 1 and rows:  # one pair of models throughout (a 2-model study): named once, in the caption
        (a, b), = pair
        lead.append(f"A: {a}; B: {b}.")
        columns, rows = [columns[0], *columns[3:]], [[row[0], *row[3:]] for row in rows]
    notes = [*lead, "Paired on the examples both runs hold (n); A - B in points for percentages, with its 95% interval; "
             "p two-sided; Holm's p adjusted over every test of this export; bold: the pair differs (Holm's p "
             "below 0.05)."]
    if untested:
        notes += [f"{', '.join(numbers)}: {why}." for why, numbers in untested.items()]
    return TexTable(caption, columns, rows, keys=1 if lead else 3, notes=notes)


def _p(p: float | None) -> Tex:
    text = p_text(p)
    return Tex("--" if text == "-" else text.replace("<", "$<$"))


def _signed(text: str) -> str:
    """A signed number with a real minus sign."""
    return text.replace("-", "$-$")
