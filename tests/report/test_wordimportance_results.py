"""The word-importance results contract round-trips real stored runs (tiny NLI model): each run's success rate
at every α with its n and interval, the per-example outcomes behind it, its leaderboard and report section, the
ORS result ``collect`` finds through the method's result file, and the study's ORS column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.attacks.wordimportance.results import RESULTS
from robusteval.attacks.wordimportance.results.ors import OrsResult
from robusteval.methods import method_named
from robusteval.report.collect import collect, short_model
from robusteval.report.compare import leaderboards
from robusteval.report.model import Table
from robusteval.report.pairing import run_outcomes
from robusteval.report.rates import results_rows, run_rates
from robusteval.runs import load_run


def test_a_runs_rates_and_outcomes_are_its_summarys(nli_runs: dict[str, Path]) -> None:
    run = load_run(nli_runs["wi-C-homophone"])
    summary = run.summary or {}
    rates = RESULTS.rates(run)
    assert [r.metric for r in rates] == [f"asr[{a}]" for a in sorted(summary["by_rate"], key=float)]
    assert [(r.metric, r.num.value, r.num.n) for r in run_rates(run)] == [(r.metric, r.num.value, r.num.n) for r in rates]
    for rate in rates:
        entry = summary["by_rate"][rate.metric[4:-1]]
        attacked = entry["n_success"] + entry["n_failed"]
        assert (rate.num.value, rate.num.n, rate.denominator) == (entry["attack_success_rate"], attacked, "n_attacked")
        assert rate.num.ci is not None and rate.num.ci[0] < rate.num.ci[1]
        outcomes = run_outcomes(run, rate.metric, rate.num.value)
        assert outcomes is not None
        kept = [value for value, weight in outcomes.rows.values() if weight]
        assert len(kept) == attacked and sum(kept) == entry["n_success"]
    assert RESULTS.outcomes is not None and RESULTS.outcomes(run, "acc", None) is None


def test_collect_finds_ors_through_the_method_and_the_report_shows_it(nli_runs: dict[str, Path]) -> None:
    inputs = collect([nli_runs["wi-C-homophone"], nli_runs["wi-C-pinyin"], nli_runs["ors"]])
    assert len(inputs.runs) == 2 and [type(r) for r in inputs.results] == [OrsResult]
    result = inputs.results[0]
    data = json.loads((nli_runs["ors"] / "ors.json").read_text(encoding="utf-8"))
    assert result.path == nli_runs["ors"] / "ors.json" and result.key()["method"] == "ors"
    assert [(model, rate.num.value) for model, rate in result.rates()] == [
        (short_model(model), score) for model, score in data["ors"].items()]
    rows = [row for row in results_rows([nli_runs["ors"]]) if row["method"] == "ors"]
    assert [row["value"] for row in rows] == list(data["ors"].values())
    boards = leaderboards(inputs)  # the two methods' runs are not comparable: one board each
    assert sorted(board.method for board in boards) == ["ors", "wordimportance", "wordimportance"]
    assert [row["asr"].value for board in boards if board.method == "wordimportance"  # type: ignore[union-attr]
            for row in board.rows] == [
        run.summary["by_rate"][max(run.summary["by_rate"], key=float)]["attack_success_rate"]
        for run in inputs.runs if run.summary]
    spec = method_named("wordimportance")
    assert spec is not None and RESULTS.section is not None
    section = RESULTS.section(inputs)
    assert section is not None and section.id == spec.section
    captions = [block.caption for block in section.blocks if isinstance(block, Table)]
    assert any(c.startswith("ORS (β = ") for c in captions) and any(c.startswith("Hard-label") for c in captions)


def test_the_study_column_is_ors_over_the_cells(nli_runs: dict[str, Path], tmp_path: Path) -> None:
    assert RESULTS.study_columns is not None
    run = load_run(nli_runs["wi-C-homophone"])
    (column,) = RESULTS.study_columns({"tiny": run}, tmp_path / "ors", {"q": 2.0})
    written = json.loads((tmp_path / "ors" / "ors.json").read_text(encoding="utf-8"))
    assert (column.metric, column.better, column.source) == ("ors", "higher", str(tmp_path / "ors"))
    assert list(column.cells) == ["tiny"] and written["q"] == 2.0
    assert column.cells["tiny"].value == pytest.approx(next(iter(written["ors"].values())))
    assert column.untested and "beta=" in column.note
