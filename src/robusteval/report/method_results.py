"""What a method gives the results layer: how its stored runs are read, counted, ranked and shown.

A method's package holds a ``results`` module (results layer) exposing one :class:`MethodResults`; its
registration (:class:`robusteval.methods.MethodSpec`) names it (``results="robusteval.x.results:RESULTS"``).
``runs show``, ``runs compare`` (terminal, CSV, LaTeX), the report, ``results_frame``, the paired tests and the
study leaderboard iterate the registry and call these; none of them names a method.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from robusteval.report.stored import ResultFile

if TYPE_CHECKING:
    from pathlib import Path

    from robusteval.metrics.significance import Outcomes
    from robusteval.report.collect import Inputs
    from robusteval.report.compare import Board
    from robusteval.report.latex_tex import Heading, TexTable
    from robusteval.report.model import Num, Rate, Section
    from robusteval.runs import Run


@dataclass(frozen=True)
class ExtraColumn:
    """A study leaderboard column computed over a method's cells together (word-importance's ORS): one number per
    model, from a result written under the study's directory."""

    metric: str  # the column's metric name ("ors")
    better: str  # "higher" or "lower"
    cells: dict[str, Num]  # study model name -> its number
    source: str  # the directory of the result the numbers come from
    note: str = ""  # the column's note (what the number is, its interval)
    #: why its pairs get no paired test (a number over every model's cells has no per-example outcomes to pair)
    untested: str = "computed over every model's cells together: no per-example outcomes to pair"


@dataclass(frozen=True)
class NumberFormat:
    """How a study column's number that is not a share reads in a paper table (word-importance's ORS)."""

    heading: str  # "ORS"
    digits: int = 1


@dataclass(frozen=True)
class MethodResults:
    """One method's results contract. Only ``rates`` is required."""

    #: Every headline number of a run, each with its n and interval (``runs show``, ``results_frame``).
    rates: Callable[[Run], list[Rate]]
    #: ``outcomes(run, metric, value)``: the per-example outcomes behind ``metric`` for the paired tests
    #: (None: the run keeps none for it).
    outcomes: Callable[[Run, str, float | None], Outcomes | None] | None = None
    #: Its ``runs compare`` leaderboards.
    boards: Sequence[Board] = ()
    #: Its report section from everything collected (None when no run of it is there).
    section: Callable[[Inputs], Section | None] | None = None
    #: Paper tables that replace its boards' generic LaTeX in ``runs compare --format latex`` (MATCHA's Tables
    #: 1-3); None: its boards' tables.
    latex: Callable[[Inputs], list[TexTable]] | None = None
    #: ``comparability(run, key)``: the run's comparability key with the fields the method resolves itself (its
    #: rules as the run used them, defaults of older runs); None: the key from the identity as it is.
    comparability: Callable[[Run, dict[str, Any]], dict[str, Any]] | None = None
    #: ``study_columns(runs by study model, out_dir, options)``: leaderboard columns computed over all of a study's
    #: cells of one (method, dataset) at once, written under ``out_dir``; ``options`` is the study's table for it.
    study_columns: Callable[[dict[str, Run], Path, dict[str, object]], list[ExtraColumn]] | None = None
    #: Result directories it writes that are not runs (word-importance's ``ors.json``): ``collect`` finds and
    #: loads them into ``Inputs.results``.
    result_files: Sequence[ResultFile] = ()
    #: Metrics of its study columns that are not shares (metric -> how a paper table shows it: not x100).
    formats: Mapping[str, NumberFormat] | None = None
    #: ``study_extras(each cell's rates)``: study leaderboard columns beside the headlines, (metric, better) each,
    #: that describe the method's inputs rather than score a model (never tested).
    study_extras: Callable[[list[list[Rate]]], list[tuple[str, str]]] | None = None
    #: How a study leaderboard column of its numbers reads, by metric (the whole name, or the name before ``[``),
    #: ``{better}`` standing for the column's direction (default: "{better} is more robust").
    readings: Mapping[str, str] = field(default_factory=dict)
    #: ``show(run)``: its own entries of ``runs show`` (beside the rates): e.g. ``outcomes`` (the attacked examples
    #: by category), ``counting`` and ``flags``, and ``left_out``, what the run left out where it says so its own
    #: way (MATCHA's: its unjudged examples, and what its secondary view leaves out); without it, the summary's
    #: ``skip_reasons`` and ``exclusions``.
    show: Callable[[Run], dict[str, Any]] | None = None
    #: How the names of its summaries' ``exclusions`` read in a sentence under a run's table (``left out of the
    #: rates: 2 (<text> 2)``); a name no method gives reads as itself.
    exclusion_texts: Mapping[str, str] = field(default_factory=dict)
    #: ``left_out_lines(summary)``: the lines under a run's table saying what a summary of its left out (after the
    #: generic ``not attacked`` line of its ``skip_reasons``), where it reads its summary its own way; None for a
    #: summary it does not (the generic ``left out of the rates`` line then).
    left_out_lines: Callable[[Mapping[str, Any]], list[str] | None] | None = None
    #: ``flag_texts(summary)``: the flags a summary carries as sentences (stored, and read from its numbers),
    #: printed under a run's table after the marker; () for none.
    flag_texts: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    #: Its rates that are shares of its examples in categories beside its headlines (no score): the study
    #: leaderboard gives one a column where some run has an example in it (so each model's categories add up).
    #: Their reading is its ``readings``.
    category_shares: Sequence[str] = ()
    #: The other denominators its rates may be given over (a rate ``metric[<name>]`` beside ``metric``): the
    #: study leaderboard gives each such rate a column beside its headline, in the headline's direction.
    denominators: Sequence[str] = ()
    #: Headings of its leaderboard columns in a paper's table (``runs compare --format latex``), where the
    #: terminal's would read badly (``n_attacked`` -> ``$n_{\mathrm{att}}$``).
    tex_headings: Mapping[str, Heading] = field(default_factory=dict)
    #: How its numbers are named in a study's paper table (``ur`` -> ``UR``; default: the metric's name).
    metric_names: Mapping[str, str] = field(default_factory=dict)
    #: How a column of its reads in a paper table's notes where its one value moves there (``rate`` -> ``α``).
    tex_note_names: Mapping[str, str] = field(default_factory=dict)
    #: ``headline_rate(rates, metric)``: the one of a run's ``rates`` that its headline ``metric`` stands for, where
    #: the name stands for one of several (word-importance's ``asr[max]``: its success rate at the run's largest
    #: α); None, or a None answer: the rate named ``metric``.
    headline_rate: Callable[[Sequence[Rate], str], Rate | None] | None = None
    #: ``sweep_counts(summary)``: a breakdown of a run's examples by kind (MATCHA's error types of its successes,
    #: kind -> count) that a sweep of it shows as shares (``share:<kind>``, mean (std) over seeds); None: none.
    sweep_counts: Callable[[Mapping[str, Any]], Mapping[str, int]] | None = None


_V = TypeVar("_V")


def registered_results() -> list[MethodResults]:
    """Every registered method's results, in the methods' order (each method's ``results`` imported only now)."""
    from robusteval.methods import methods

    return [results for spec in methods() if (results := spec.load_results()) is not None]


def merged(pick: Callable[[MethodResults], Mapping[str, _V]]) -> dict[str, _V]:
    """One mapping of every registered method's (``pick(results)``: its ``exclusion_texts``, ``tex_headings``...),
    the first method's entry where two give the same key."""
    return {key: value for results in reversed(registered_results()) for key, value in pick(results).items()}
