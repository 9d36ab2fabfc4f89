"""The part of a study's report.html that opens it: the study leaderboard and its pairwise tests.

The same numbers, model names and flags as ``leaderboard.csv`` (each cell is the leaderboard's own
:class:`~robusteval.report.model.Num`), one row per column of the leaderboard with the direction it reads in, one
column per model; every number links to the report section that shows its run. Under it, every pair of models
tested on each column (:mod:`robusteval.report.pairing`, Holm-adjusted over the whole table).
"""

from __future__ import annotations

from robusteval.report.compare import pairwise_table
from robusteval.report.model import Cell, Note, Section, Table
from robusteval.studies.leaderboard import StudyLeaderboard

SECTION_ID = "leaderboard"


def leaderboard_section(board: StudyLeaderboard) -> Section:
    section = Section(
        SECTION_ID,
        "Study leaderboard",
        "One row per number, one column per model: value [95% interval] and n, as leaderboard.csv "
        "holds them (hover a number for what its n counts and its run); ⚑ marks a flagged number. "
        "Each number links to the section that shows its run; the pairwise tests below say which "
        "models differ.",
    )
    rows: list[list[Cell]] = []
    links: list[list[str]] = []
    for column in board.columns:
        cells: list[Cell] = [column.label, column.reads]
        targets = ["", ""]
        for model in board.models:
            num = board.cells.get((model, column.name))
            cells.append("-" if num is None else num)
            targets.append(
                f"#{board.sections[column.name]}" if num is not None and column.name in board.sections else ""
            )
        rows.append(cells)
        links.append(targets)
    section.add(
        Table(
            "Study leaderboard: value [95% interval] n per model",
            ["number", "reads", *board.models],
            rows,
            links=links,
        )
    )
    for note in [*board.notes, *(f"{c.label}: {c.note}" for c in board.columns if c.note)]:
        section.add(Note(note))
    if board.comparisons:
        section.add(pairwise_table(board.comparisons, "Pairwise tests: which models differ on each number"))
    else:
        section.add(Note("No pairwise test: the study has one model, or no number that two models share."))
    return section
