"""Leaderboards: runs of one method side by side, ranked by the method's headline number.

``compare_runs(paths)`` is what ``robusteval runs compare`` prints (terminal table, CSV or LaTeX) and what the
HTML report's comparison section shows, so the two never disagree; every number in it is the one the method's
section builder makes (same value, n and interval), so the leaderboards never disagree with the section tables.

Only comparable runs are ranked together: runs of one method fall into groups by their comparability key
(:mod:`robusteval.report.comparability`: data and its hash, label mode, judges, success rule, settings...),
one leaderboard per group, each saying how its key differs from the other groups'. Inside a group, most robust
first:

* answer-first eval: higher accuracy; MATCHA: higher UR (answer and reasoning both survive) ranks first, then
  lower SR;
* transfer: lower transfer rate; VAR-MATH: higher strict score; perturbed benchmarks: lower RB-index;
* hard-label attacks: lower success rate at the largest α; ORS: higher score.

A ranking number resting on fewer than ``min_n`` examples (MATCHA: ``n_attacked``), or whose 95% interval is wider
than ``max_width``, is shown but not ranked (rank "-" and the reason): one example's UR of 0 says nothing.

Inside a group every pair of runs is tested on the method's headline numbers (:mod:`robusteval.report.pairing`:
McNemar or a paired bootstrap on the examples both runs hold), the p-values Holm-adjusted over every test of the
call (:attr:`Leaderboard.comparisons`). Runs in different groups are not paired, and never tested.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from robusteval.config import path_list
from robusteval.errors import UserError
from robusteval.methods import methods
from robusteval.report.collect import (
    Inputs,
    collect,
    nothing_to_show,
)
from robusteval.report.comparability import comparability_key, key_hash, why_apart
from robusteval.report.model import Note, Num, Section, Table
from robusteval.report.pairing import ROW_COLUMNS, Comparison, comparison_row, holm_table, pairwise
from robusteval.runs import Run

if TYPE_CHECKING:
    from robusteval.report.latex_tex import TexTable

Row = dict[str, Num | str]


#: A rate whose 95% interval is wider than this (a share: 0.5 = 50 points) is shown but not ranked.
DEFAULT_MAX_WIDTH = 0.5
#: A rate over fewer examples than this (MATCHA: n_attacked) is shown but not ranked.
DEFAULT_MIN_N = 10
#: The column that says why a row has no rank.
UNRANKED = "unranked_because"
#: Columns a table shows only where some row fills them (a board adds its own: :attr:`Board.optional`).
OPTIONAL: frozenset[str] = frozenset()
#: Columns a table shows only where some row's number is not 0 (a board adds its own: :attr:`Board.zero_hidden`).
ZERO_HIDDEN: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Leaderboard:
    """One method's runs that are comparable with each other (one comparability key), best first."""

    method: str
    title: str
    columns: Sequence[str]  # "rank" first, then the task columns, the numbers, UNRANKED and "run"
    rows: Sequence[dict[str, Num | str]]
    key: Mapping[str, str] = field(default_factory=dict)  # the comparability key every row shares
    apart: str = ""  # why this group is not ranked with the method's other groups ("" when it is the only one)
    #: every pair of the group's runs tested on the method's headline numbers (Holm-adjusted over the call)
    comparisons: Sequence[Comparison] = ()

    @property
    def models(self) -> set[str]:
        return {str(row["model"]) for row in self.rows}

    @property
    def shown(self) -> list[str]:
        """The columns a table shows: all but "run", without a category share (``share_*``, VAR-MATH's
        diagnosis) that is empty or 0 in every row, nor an optional column (:data:`OPTIONAL`, a board's
        ``optional``) empty in every row, nor one of a board's ``zero_hidden`` 0 in every row; the CSV keeps every
        column."""
        boards = all_boards()
        optional = OPTIONAL.union(*(board.optional for board in boards))
        zero_hidden = ZERO_HIDDEN.union(*(board.zero_hidden for board in boards))

        def used(column: str) -> bool:
            return any(isinstance(row.get(column), Num) and row[column].value for row in self.rows)  # type: ignore[union-attr]

        def filled(column: str) -> bool:  # a count of 0 in every row says nothing a reader needs
            return any(row.get(column) not in (None, "", "0") for row in self.rows)

        return [c for c in self.columns if c != "run" and (not c.startswith("share_") or used(c))
                and (c not in optional or filled(c)) and (c not in zero_hidden or used(c))]

    @property
    def group(self) -> str:
        """The comparability key's short hash (``results_frame``'s ``comparability_key``)."""
        return key_hash(self.key)

    def records(self) -> list[dict[str, Any]]:
        """Plain values for the CSV: each number as stored (not formatted) with its n and 95% interval
        (``<column>_n``, ``<column>_ci_low``, ``<column>_ci_high``), and the row's comparability group."""
        out = []
        for row in self.rows:
            record: dict[str, Any] = {"method": self.method, "group": self.group}
            for column in self.columns:
                cell = row.get(column)
                if not isinstance(cell, Num):
                    record[column] = cell
                    continue
                ci = cell.ci if cell.ci is not None and None not in cell.ci else (None, None)
                record.update({column: cell.value, f"{column}_n": cell.n, f"{column}_ci_low": ci[0],
                               f"{column}_ci_high": ci[1]})
            record["why_apart"] = self.apart
            out.append(record)
        return out


def _value(row: Mapping[str, Any], name: str, *, descending: bool) -> tuple[bool, float]:
    """Sort key: missing values last, then by value in the direction asked."""
    num = row.get(name)
    value = num.value if isinstance(num, Num) else None
    if value is None:
        return True, 0.0
    return False, -value if descending else value


def unranked_reason(num: Num, denominator: str, *, max_width: float, min_n: int) -> str:
    """Why ``num`` may not be ranked ("" when it may): no value, too few examples, or too wide an interval."""
    if num.value is None:
        return f"no value ({denominator} = {num.n})" if num.n is not None else "no value"
    if num.n is None:
        return f"{denominator} not recorded"
    if num.n < min_n:
        return f"{denominator} = {num.n} < {min_n}"
    if num.ci is None or len(num.ci) != 2 or None in num.ci:
        return "no 95% interval recorded"
    width = num.ci[1] - num.ci[0]
    if width > max_width:
        scale, unit = (100, " points") if num.percent else (1, "")
        return f"95% interval {width * scale:.0f}{unit} wide > {max_width * scale:.0f}"
    return ""


def _ranked(rows: list[Row], order: Sequence[tuple[str, bool]], gate: tuple[str, str] | None, *,
            max_width: float, min_n: int) -> list[Row]:
    """Rows best first (by each (column, descending) of ``order`` in turn); a row whose ranking number fails
    the gate (``(column, what its n counts)``; see :func:`unranked_reason`) comes after the ranked ones with
    rank "-" and the reason."""
    ordered = sorted(rows, key=lambda r: tuple(_value(r, c, descending=d) for c, d in order))
    ranked: list[Row] = []
    unranked: list[Row] = []
    for row in ordered:
        num = row.get(gate[0]) if gate else None
        reason = (unranked_reason(num, gate[1], max_width=max_width, min_n=min_n)
                  if gate and isinstance(num, Num) else "")
        (unranked if reason else ranked).append({**row, UNRANKED: reason})
    return ([{"rank": str(i), **row} for i, row in enumerate(ranked, 1)]
            + [{"rank": "-", **row} for row in unranked])


# One row per run (per model of an ORS result); every number is the section builder's own Num, so the report's
# tables and the leaderboards show the same value with the same n and interval.



@dataclass(frozen=True)
class Board:
    """How one method's leaderboards are made: whose rows, which columns, what ranks first."""

    method: str
    #: the runs' command, or the ``kind`` of the stored results it ranks (``Inputs.results``: not runs)
    command: str
    title: str
    shown: tuple[str, ...]  # columns between "model" and UNRANKED
    order: tuple[tuple[str, bool], ...]  # (column, descending), best first
    rows: Callable[..., list[Row]]  # rows(run), or rows(run, others) when ``paired``
    #: (column, what its n counts) of the number that must be precise enough to rank; None: not a rate (ORS)
    gate: tuple[str, str] | None
    #: rows(run, the method's other runs): a run read beside another of its method (a variants run and its original)
    paired: bool = False
    #: (column, the runs' name for the number, the better direction) of each number every pair is tested on;
    #: ``asr[top]``: the success rate at the run's largest α
    tested: tuple[tuple[str, str, str], ...] = ()
    #: headings of its own columns (beside the common ones: :data:`HEADINGS` reads both)
    headings: Mapping[str, str] = field(default_factory=dict)
    #: its columns shown only where some row fills them (runs made before a column was recorded leave it empty)
    optional: frozenset[str] = frozenset()
    #: its columns shown only where some row's number is not 0 (a category no run holds an example of)
    zero_hidden: frozenset[str] = frozenset()
    #: ``metric_of(run, tested name)``: the run's own name for a tested number, where the tested name stands for
    #: one of several (word-importance's ``asr[top]``: the success rate at the run's largest α)
    metric_of: Callable[[Any, str], str] | None = None
    #: ``tex(leaderboard, inputs, table)``: its paper tables for ``runs compare --format latex`` from the
    #: leaderboard's generic ``table`` (more notes, per-set or per-category tables); None: that table alone
    tex: Callable[[Leaderboard, Inputs, TexTable], list[TexTable]] | None = None
    #: its columns a paper's table leaves out (said in notes or tables of its own)
    tex_hidden: frozenset[str] = frozenset()
    #: (title, columns) of terminal tables of their own after the main one (``runs compare``): columns that would
    #: fold every cell of one table (MATCHA's other categories, VAR-MATH's category shares)
    own_tables: tuple[tuple[str, tuple[str, ...]], ...] = ()



def board_kind(method: str) -> Board | None:
    """The leaderboard kind of ``method`` (a ``Leaderboard``'s ``method``)."""
    return next((board for board in all_boards() if board.method == method), None)


def all_boards() -> tuple[Board, ...]:
    """Every leaderboard kind: the registered methods' boards, in the methods' order."""
    return tuple(board for spec in methods() if (results := spec.load_results()) is not None
                 for board in results.boards)


def check_thresholds(max_width: float, min_n: int, *, names: tuple[str, str] = ("max_width", "min_n")) -> None:
    """A UserError unless ``max_width`` is a share in (0, 1] and ``min_n`` a whole number >= 0 (``names``: how
    the caller calls them, so a command can name its flags)."""
    if isinstance(max_width, bool) or not isinstance(max_width, int | float) or not 0 < max_width <= 1:
        raise UserError(f"{names[0]} {max_width!r}: give a share of the scale in (0, 1] (0.5 = 50 points)")
    if isinstance(min_n, bool) or not isinstance(min_n, int) or min_n < 0:
        raise UserError(f"{names[1]} {min_n!r}: give a whole number of examples, 0 or more")


def leaderboard_groups(board: Board, inputs: Inputs, *, max_width: float = DEFAULT_MAX_WIDTH,
                       min_n: int = DEFAULT_MIN_N) -> list[Leaderboard]:
    """``board``'s leaderboards: one per comparability key among its runs (in the order the runs came), each
    saying how its key differs from the others'."""
    runs = [run for run in inputs.of(board.command) if run.summary]
    sources: list[Any] = [*runs, *inputs.stored(board.command)]
    groups: dict[str, tuple[dict[str, str], list[Row]]] = {}
    for source in sources:
        key = comparability_key(source) if isinstance(source, Run) else source.key()
        made = board.rows(source, sources) if board.paired else board.rows(source)
        rows = [{**row, "run": str(source.path)} for row in made]
        groups.setdefault(key_hash(key), (key, []))[1].extend(rows)
    keys = [key for key, _ in groups.values()]
    boards = []
    for i, (key, rows) in enumerate(groups.values(), 1):
        title = board.title if len(groups) == 1 else f"{board.title} (comparable group {i} of {len(groups)})"
        apart = why_apart(key, [other for other in keys if other is not key])
        boards.append(Leaderboard(board.method, title, ["rank", "model", *board.shown, UNRANKED, "run"],
                                  _ranked(rows, board.order, board.gate, max_width=max_width, min_n=min_n),
                                  key, apart, _pairs(board, rows, sources)))
    return boards


def _pairs(board: Board, rows: Sequence[Row], sources: Sequence[Any]) -> list[Comparison]:
    """Every pair of a group's runs tested on ``board.tested`` (p-values not yet adjusted)."""
    by_path = {str(source.path): source for source in sources}
    named = [(str(row["model"]), by_path[str(row["run"])], row) for row in rows if str(row["run"]) in by_path]
    # Two runs of one model (repeats with another seed) are told apart by their directory.
    clash = {name for name in (n for n, _, _ in named) if sum(1 for m, _, _ in named if m == name) > 1}
    out: list[Comparison] = []
    for column, metric, better in board.tested:
        runs = []
        for name, run, row in named:
            num = row.get(column)
            shown = f"{name} ({run.path.name})" if name in clash else name
            own = board.metric_of(run, metric) if board.metric_of is not None else metric
            runs.append((shown, run, own, num.value if isinstance(num, Num) else None))
        percent = all(isinstance(row.get(column), Num) and row[column].percent for _, _, row in named)  # type: ignore[union-attr]
        out += pairwise(f"{board.method} {HEADINGS.get(column, column)}", metric, better, runs, percent=percent)
    return out


def _holm_over(boards: list[Leaderboard]) -> list[Leaderboard]:
    """``boards`` with their comparisons' p-values Holm-adjusted together (one family: what one call shows)."""
    adjusted = iter(holm_table([c for board in boards for c in board.comparisons]))
    return [replace(board, comparisons=[next(adjusted) for _ in board.comparisons]) for board in boards]


def leaderboards(inputs: Inputs, *, max_width: float = DEFAULT_MAX_WIDTH, min_n: int = DEFAULT_MIN_N
                 ) -> list[Leaderboard]:
    """Every method's leaderboards, one per group of comparable runs (direct runs only: sweeps have their own
    table)."""
    check_thresholds(max_width, min_n)
    return _holm_over([group for board in all_boards()
                       for group in leaderboard_groups(board, inputs, max_width=max_width, min_n=min_n)])


def compare_runs(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *, max_width: float = DEFAULT_MAX_WIDTH,
                 min_n: int = DEFAULT_MIN_N) -> list[Leaderboard]:
    """The leaderboards of the runs (and ORS results) found at ``paths``: one per method and group of comparable
    runs (same comparability key: :mod:`robusteval.report.comparability`). Each row's numbers are
    :class:`~robusteval.report.model.Num` (value, n, 95% interval); a row whose ranking number rests on fewer
    than ``min_n`` examples (MATCHA: ``n_attacked``) or whose interval is wider than ``max_width`` (a share: 0.5 =
    50 points) is shown with rank "-" and the reason. A UserError when there is nothing to rank (only
    unfinished runs, or runs of no method the report knows; sweeps have their own table)."""
    check_thresholds(max_width, min_n)
    inputs = collect(path_list(paths, "compare_runs()"))
    boards = leaderboards(inputs, max_width=max_width, min_n=min_n)
    if not boards:
        raise nothing_to_show(inputs, "runs compare: nothing to rank")
    return boards


#: Column headings in the page and the terminal (the CSV keeps the plain names).
#: Headings every method's columns share (a method's own are its boards' ``headings``).
COMMON_HEADINGS = {"acc": "ACC %", UNRANKED: "not ranked because"}


class Headings(Mapping[str, str]):
    """Column headings: the common ones, then those each leaderboard kind declares (``Board.headings``), read
    when asked (a registered method's board is loaded only then)."""

    def _all(self) -> dict[str, str]:
        return {**{column: text for board in all_boards() for column, text in board.headings.items()},
                **COMMON_HEADINGS}

    def __getitem__(self, column: str) -> str:
        return COMMON_HEADINGS[column] if column in COMMON_HEADINGS else self._all()[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


HEADINGS = Headings()


def comparison_section(inputs: Inputs) -> Section:
    section = Section("compare", "Comparison across runs",
                      "One leaderboard per method and group of comparable runs (same data, label mode, judges, "
                      "success rule, settings...) when several models were run; a number over fewer than "
                      f"{DEFAULT_MIN_N} examples or with a 95% interval wider than {DEFAULT_MAX_WIDTH:.0%} is shown "
                      "but not ranked. `robusteval runs compare DIR...` prints the same tables in the terminal, "
                      "as CSV or as LaTeX.")
    for board in leaderboards(inputs):
        if len(board.models) < 2:
            continue
        columns = board.shown
        names = dict(HEADINGS)
        section.add(Table(board.title, [names.get(c, c) for c in columns],
                          [[row.get(c, "") for c in columns] for row in board.rows],
                          note=f"comparability key {board.group}" + (f"; {board.apart}" if board.apart else "")))
        if board.comparisons:
            section.add(pairwise_table(board.comparisons, f"{board.title}: pairwise tests"))
    if not section.blocks:
        section.add(Note("No method here has two models whose runs are comparable: give runs of several models, "
                         "made with the same data and settings, to rank them."))
    return section


def pairwise_table(comparisons: Sequence[Comparison], caption: str) -> Table:
    """The pairwise tests as a page table: each pair's difference with its interval, the test, n, p, the
    Holm-adjusted p and the verdict."""
    rows = [[comparison_row(c)[name] for name in ROW_COLUMNS] for c in comparisons]
    return Table(caption, list(ROW_COLUMNS), rows, note=PAIRWISE_NOTE)


#: What the pairwise tables say under them.
PAIRWISE_NOTE = ("Paired on the examples both runs hold (joined on the example id): McNemar (exact binomial below "
                 "25 discordant examples, else chi-square with continuity correction) where both numbers are shares "
                 "of the same examples, else a seeded paired bootstrap; A - B in points with its 95% interval; p "
                 "two-sided; p (Holm): adjusted together over every pairwise test shown with it (the whole study "
                 "leaderboard, or every group one comparison holds); 'differ' where it is below 0.05.")
