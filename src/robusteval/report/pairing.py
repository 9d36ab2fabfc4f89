"""Paired tests between models: each run's per-example outcomes behind a number, joined on the example id.

:func:`run_outcomes` reads, from a run's stored units (or its summary's per-problem scores; a registered method's
``MethodResults.outcomes``), the
per-example values that make one of its numbers (the ``report.rates`` names: ``acc``, ``ur``, ``sr``, ``wr``,
``acc[original]``, ``acc[<set>]``, ``rb_index``, ``strict``, ``loose``, ``asr[<α>]``, ...); a registered
method's results give their own (:attr:`~robusteval.report.method_results.MethodResults.outcomes`).
:func:`pairwise` tests every pair of models of one column (:func:`robusteval.metrics.significance.paired_test`)
and :func:`holm_table` adjusts a table's p-values together. A number without per-example outcomes (ORS, a drop
from the original problems) is said not tested; so is a pair of runs that are not comparable (different
comparability keys: different data, judges, settings) or that share no example.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from robusteval.methods import results_of_command
from robusteval.metrics.significance import (
    Outcomes,
    PairedTest,
    holm_adjusted,
    paired_test,
    share,
)
from robusteval.report.comparability import comparability_key
from robusteval.runs import Run
from robusteval.seeding import derive_seed


def stage_records(run: Run, stage: str) -> list[tuple[str, dict[str, Any]]]:
    """(example id, record) of every unit of ``stage`` (what a method's outcome reader builds on)."""
    if stage not in run.stages:
        return []
    return [
        (str(u["example_id"] if u["example_id"] is not None else u["record"].get("id")), u["record"])
        for u in run.units(stage)
    ]


def share_outcomes(rows: Mapping[str, tuple[bool, bool]], value: float | None) -> Outcomes:
    """(outcome, counted) per example: a share of the counted examples (an outcome outside them counts 0)."""
    return Outcomes(
        {i: (float(hit and counted), float(counted)) for i, (hit, counted) in rows.items()}, share, value
    )

def run_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """The per-example outcomes behind the run's number ``metric`` (shown as ``value``); None where the run keeps
    none for it."""
    results = results_of_command(run.command)
    if results is None or results.outcomes is None or not run.summary:
        return None
    outcomes: Outcomes | None = results.outcomes(run, metric, value)
    return outcomes


@dataclass(frozen=True)
class Comparison:
    """One pair of models compared on one number (a leaderboard column)."""

    column: str  # the table's name for the number ("eval:math:acc", "MATCHA UR")
    metric: str
    better: str  # "higher" or "lower": the direction that is better
    model_a: str
    model_b: str
    run_a: str
    run_b: str
    test: PairedTest
    percent: bool = True
    label: str = ""  # how a table names the number ("eval · math · acc"; default: ``column``)

    def verdict(self) -> str:
        """``differ: A better`` (Holm-adjusted p < :data:`ALPHA`) / ``no significant difference`` / the status of a
        pair not tested (``test_text`` says why)."""
        test = self.test
        if test.status != "tested":
            return test.status
        if not test.significant:
            return "no significant difference"
        higher = self.model_a if (test.difference or 0) > 0 else self.model_b
        lower = self.model_b if higher == self.model_a else self.model_a
        return f"differ: {higher if self.better == 'higher' else lower} better"

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "metric": self.metric,
            "better": self.better,
            "model_a": self.model_a,
            "model_b": self.model_b,
            "run_a": self.run_a,
            "run_b": self.run_b,
            **self.test.to_dict(),
            "verdict": self.verdict(),
        }


def pairwise(
    column: str,
    metric: str,
    better: str,
    runs: Sequence[tuple[str, Run, str, float | None]],
    *,
    percent: bool = True,
    seed: int = 0,
    label: str = "",
) -> list[Comparison]:
    """Every pair of ``runs`` ((model, run, the run's metric name, the value shown)), in order, compared on the
    examples they share; p-values not yet adjusted (:func:`holm_table`)."""
    outcomes = {model: run_outcomes(run, name, value) for model, run, name, value in runs}
    keys = {model: comparability_key(run) for model, run, _, _ in runs}
    out = []
    for i, (model_a, run_a, _, _) in enumerate(runs):
        for model_b, run_b, _, _ in runs[i + 1 :]:
            first, second = outcomes[model_a], outcomes[model_b]
            if keys[model_a] != keys[model_b]:
                test = PairedTest(
                    "not tested", note="the runs are not comparable (different comparability keys)"
                )
            elif first is None or second is None:
                test = PairedTest("not tested", note="no per-example outcomes stored for this number")
            else:
                test = paired_test(
                    first, second, seed=derive_seed(seed, "significance", column, model_a, model_b)
                )
            out.append(
                Comparison(
                    column,
                    metric,
                    better,
                    model_a,
                    model_b,
                    str(run_a.path),
                    str(run_b.path),
                    test,
                    percent,
                    label,
                )
            )
    return out


def holm_table(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """``comparisons`` with Holm-adjusted p-values over all of them (one table, one family)."""
    tests = holm_adjusted([c.test for c in comparisons])
    return [replace(c, test=t) for c, t in zip(comparisons, tests, strict=True)]


def difference_text(comparison: Comparison) -> str:
    """``+15.0 [-6.3, 35.4]`` (in points for percentages), or "-" when not tested."""
    test = comparison.test
    if test.difference is None:
        return "-"
    scale = 100.0 if comparison.percent else 1.0  # a difference of percentages is in points
    shown = f"{test.difference * scale:+.1f}"
    if test.ci95 is not None:
        shown += f" [{test.ci95[0] * scale:.1f}, {test.ci95[1] * scale:.1f}]"
    return shown


def p_text(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def test_text(test: PairedTest) -> str:
    """``McNemar exact, b=13 c=7`` / ``paired bootstrap``, and the examples it is over."""
    if test.status != "tested":
        return test.note
    detail = f", b={test.discordant[0]} c={test.discordant[1]}" if test.discordant else ""
    return f"{test.test}{detail}" + (f"; {test.note}" if test.note else "")


def comparison_row(comparison: Comparison) -> dict[str, str]:
    """One printable row: the pair, the difference with its interval, the test, n, p and Holm's p, the verdict."""
    test = comparison.test
    return {
        "number": comparison.label or comparison.column,
        "A": comparison.model_a,
        "B": comparison.model_b,
        "A - B": difference_text(comparison),
        "n": str(test.n) if test.n else "-",
        "test": test_text(test),
        "p": p_text(test.p),
        "p (Holm)": p_text(test.p_holm),
        "verdict": comparison.verdict(),
    }


ROW_COLUMNS = ("number", "A", "B", "A - B", "n", "test", "p", "p (Holm)", "verdict")


def pairwise_csv(comparisons: Sequence[Comparison]) -> str:
    """One CSV row per pair and number: both values on the shared examples, the difference and its interval,
    the test, n, p and the Holm-adjusted p, and the verdict (lists joined with "; ")."""
    rows = [
        {
            key: ("; ".join(map(str, value)) if isinstance(value, list) else value)
            for key, value in c.to_dict().items()
        }
        for c in comparisons
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["column"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
