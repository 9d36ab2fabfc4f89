"""A method's study columns (numbers computed over all of a study's cells at once, like ORS) are shown for every
model, and every pair of models on them is listed as not tested, with why: such a number has no per-example
outcomes to pair. A column that gives no reason of its own gets the general one, never silently no pair."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from robusteval.methods import MethodSpec
from robusteval.report.method_results import ExtraColumn
from robusteval.report.model import Num
from robusteval.studies.leaderboard import StudyLeaderboard, _add_columns


def columns(runs: dict[str, Any], out: Path, options: dict[str, object]) -> list[ExtraColumn]:
    return [ExtraColumn("score", "higher", {m: Num(0.5 + i / 10, n=20, ci=(0.3, 0.8)) for i, m in enumerate(runs)},
                        str(out))]


def test_every_pair_on_a_study_column_is_listed_as_not_tested_with_why(tmp_path: Path) -> None:
    board = StudyLeaderboard(["a", "b", "c"], [])
    spec = MethodSpec("demo", "demo run", "", "demo")
    plan = SimpleNamespace(tables={})
    _add_columns(board, plan, tmp_path, "demo", "yn", {"a": None, "b": None, "c": None}, spec,  # type: ignore[arg-type]
                 columns)
    assert [c.name for c in board.columns] == ["demo:yn:score"]
    assert {model for model, _ in board.cells} == {"a", "b", "c"}
    pairs = [(c.model_a, c.model_b, c.test.status, c.test.note) for c in board.comparisons]
    why = "computed over every model's cells together: no per-example outcomes to pair"
    assert pairs == [("a", "b", "not tested", why), ("a", "c", "not tested", why), ("b", "c", "not tested", why)]
