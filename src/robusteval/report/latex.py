"""``runs compare --format latex``: booktabs tables a paper can paste unedited.

The tables: a method's own paper tables where its results give them (:attr:`MethodResults.latex
<robusteval.report.method_results.MethodResults.latex>`), every other method's leaderboards with their per-set or
per-category tables (:mod:`robusteval.report.latex_methods`), a study's leaderboard when a study directory is
exported (:mod:`robusteval.report.latex_study`), and the
pairwise tests. Each is written by :mod:`robusteval.report.latex_tex`: escaped text, every number as
``value {\\scriptsize[low, high]}`` with its n in a column, a heading or the caption, a ``table`` or ``table*``
chosen by its width (split into parts where even the page is too narrow), a ``\\label{tab:...}`` (from its caption,
unique in the file). The document needs only ``\\usepackage{booktabs}``.

Captions say what a reader needs (what each n counts, the counting, the flags, the rank order and why a row is not
ranked); what identifies the runs for robusteval (the comparability key, how a group differs from the others, the
paper layout a table follows) goes in ``%`` comments above the table. Models are named as the study names them
when a study directory is exported (``runs compare STUDY_DIR``), else by their readable name; ``rename``
(``--rename OLD=NEW``) names them as the paper does. ``digits`` (``--digits N``) sets the decimals of every number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from robusteval.errors import UserError
from robusteval.methods import methods
from robusteval.report.collect import Inputs, collect, model_name, nothing_to_show
from robusteval.report.compare import (
    DEFAULT_MAX_WIDTH,
    DEFAULT_MIN_N,
    Leaderboard,
    check_thresholds,
    leaderboards,
)
from robusteval.report.latex_methods import board_tables, pairwise_table
from robusteval.report.latex_study import study_table
from robusteval.report.latex_tex import Style, escape, label_of, renamed, render

__all__ = ["MAX_DIGITS", "STUDY_STATE", "check_digits", "compare_latex", "escape", "label_of", "pairwise_latex",
           "parse_renames", "renamed", "study_names"]

#: A study directory's state file: ``robusteval.studies.study.STATE_NAME`` (a layer above the report: not
#: imported; tests/report/test_latex_export.py holds them equal).
STUDY_STATE = "study.json"
#: The decimals ``--digits`` may ask for.
MAX_DIGITS = 6
#: What the document needs, said on the file's first line.
PREAMBLE = r"% robusteval runs compare --format latex; needs \usepackage{booktabs}"


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


def _prepared(paths: Sequence[str | os.PathLike[str]], max_width: float, min_n: int, digits: int | None,
              rename: Mapping[str, str] | None) -> tuple[Style, list[Leaderboard], Inputs]:
    check_thresholds(max_width, min_n)
    check_digits(digits)
    given = dict(rename or {})
    # A study's name for a model may itself be renamed ("--rename bars-tiny=Bars"), as may the name shown.
    names = {shown: given.get(named, named) for shown, named in study_names(paths).items()} | given
    inputs = collect(paths)
    boards = leaderboards(inputs, max_width=max_width, min_n=min_n)
    if not boards:
        raise nothing_to_show(inputs, "runs compare: nothing to rank")
    return Style(digits, names), boards, inputs


def _header(style: Style) -> str:
    line = PREAMBLE
    if style.rename:
        renames = "; ".join(f"{old} -> {new}" for old, new in style.rename.items())
        line += "\n% models renamed: " + " ".join(renames.split())
    return line


def _pairwise(boards: Sequence[Leaderboard], style: Style) -> list[str]:
    names = {old: renamed(old, style.rename) for board in boards for c in board.comparisons
             for old in (c.model_a, c.model_b)}
    return [render(pairwise_table(board.comparisons, f"Pairwise tests: {board.title.partition(':')[0]}", names),
                   style) for board in boards if board.comparisons]


def compare_latex(paths: Sequence[str | os.PathLike[str]], *, max_width: float = DEFAULT_MAX_WIDTH,
                  min_n: int = DEFAULT_MIN_N, digits: int | None = None,
                  rename: Mapping[str, str] | None = None) -> str:
    """The LaTeX of ``runs compare --format latex``: the methods' own paper tables (``MethodResults.latex``), a
    study's leaderboard, every other method's leaderboards, and the pairwise tests (see the module docstring).
    Models are named as a
    study among ``paths`` names them (:func:`study_names`), then as ``rename`` says (old: the study's name or the
    name shown without it; it wins); ``digits``: decimals of every number."""
    style, boards, inputs = _prepared(paths, max_width, min_n, digits, rename)
    parts = [_header(style)]
    # A method whose results give their own tables shows those instead of its leaderboards' generic ones.
    own = [results for spec in methods() if (results := spec.load_results()) is not None and results.latex]
    parts += [render(table, style) for results in own for table in results.latex(inputs)]
    parts += [render(table, style) for path in paths for table in study_table(Path(path))]
    replaced = {board.method for results in own for board in results.boards}
    parts += [render(table, style) for board in boards if board.method not in replaced
              for table in board_tables(board, inputs)]
    parts += _pairwise(boards, style)
    return "\n\n".join(parts) + "\n"


def pairwise_latex(paths: Sequence[str | os.PathLike[str]], *, max_width: float = DEFAULT_MAX_WIDTH,
                   min_n: int = DEFAULT_MIN_N, digits: int | None = None,
                   rename: Mapping[str, str] | None = None) -> str:
    """Only the pairwise tests of :func:`compare_latex`, as LaTeX (``--pairwise FILE.tex``)."""
    style, boards, _ = _prepared(paths, max_width, min_n, digits, rename)
    tables = _pairwise(boards, style)
    if not tables:
        return _header(style) + "\n% no pair of comparable runs to test\n"
    return "\n\n".join([_header(style), *tables]) + "\n"
