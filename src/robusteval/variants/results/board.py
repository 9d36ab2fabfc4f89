"""VAR-MATH's leaderboard (``runs compare``): one row per run with its scores and its diagnosis (paired with the
original run), ranked by the strict score; in LaTeX, the diagnosis shares get a table of their own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from robusteval.report.collect import Inputs, model_name
from robusteval.report.compare import Board, Leaderboard, Row
from robusteval.report.latex_methods import heading
from robusteval.report.latex_tex import TexTable
from robusteval.runs import Run
from robusteval.variants.pipeline import COMMAND
from robusteval.variants.results import section as varmath


def rows(run: Run, others: Sequence[Run] = ()) -> list[Row]:
    """A VAR-MATH run's scores and its diagnosis (paired with the original run among ``others`` when it stored
    none): the label, the relative strict drop (paired interval, n = problems with an original) and every
    category's share (Wilson interval, n = problems)."""
    summary = run.summary or {}
    diagnosis = varmath.diagnosis_of(run, others)
    return [{"model": model_name(run), "instances": Path(str(summary.get("instances") or "?")).name,
             "n_problems": str(summary.get("n_problems")), "strict": varmath.accuracy(run, "strict"),
             "loose": varmath.accuracy(run, "loose"), "diagnosis": varmath.diagnosis_label(diagnosis),
             "strict_drop": varmath.drop(diagnosis, "strict", "relative", run),
             **{f"share_{name}": varmath.category_share(diagnosis, name, run) for name in varmath.SHOWN_CATEGORIES}}]


def tex_tables(board: Leaderboard, inputs: Inputs, main: TexTable) -> list[TexTable]:
    """The leaderboard's table, then the problems per diagnosis category (one column per category shown)."""
    shares = [c for c in board.shown if c.startswith("share_")]
    if not shares:
        return [main]
    title = board.title.partition(": ")[0]
    return [main, TexTable(f"{title}: problems per diagnosis category (%)", ["Model", *(heading(c) for c in shares)],
                           [[row["model"], *(row.get(c, "") for c in shares)] for row in board.rows],
                           notes=[f"n: the problems of each model ({main.caption}).", "Each number: value [95% "
                                  "Wilson interval]."], comments=main.comments)]


BOARD = Board("variants", COMMAND, "VAR-MATH: higher strict score ranks first",
              ("instances", "n_problems", "strict", "loose", "diagnosis", "strict_drop",
               *(f"share_{name}" for name in varmath.SHOWN_CATEGORIES)), (("strict", True), ("loose", True)),
              rows, ("strict", "n_problems"), paired=True,
              tested=(("strict", "strict", "higher"), ("loose", "loose", "higher")),
              headings={"n_problems": "problems", "strict": "strict %", "loose": "loose %",
                        "strict_drop": "strict drop %",
                        **{f"share_{name}": f"{varmath.CATEGORY_NAMES[name]} %" for name in varmath.SHOWN_CATEGORIES}},
              tex=tex_tables,
              own_tables=(("problems per diagnosis category, % [95% Wilson interval] (n = problems)",
                           tuple(f"share_{name}" for name in varmath.SHOWN_CATEGORIES)),))
