"""A sweep reads what it averages from the swept method's registration: its ``summary_rates`` (else its headlines)
and its results' ``sweep_counts`` breakdown; the report's check of a sweep.json reads any method's numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from robusteval.errors import DataError
from robusteval.methods import METHODS, MethodSpec, method_named, register_method
from robusteval.metrics.matcha import MATCHA_RATES
from robusteval.report.collect import load_sweep
from robusteval.studies.sweep import aggregate, sweep_metrics, table_rows


def test_matchas_sweep_reads_its_registration() -> None:
    spec = method_named("matcha")
    assert spec is not None
    assert sweep_metrics("matcha") == ("acc", "ur", "sr", "wr") == MATCHA_RATES  # its registration says its own
    counts = spec.load_results().sweep_counts
    assert counts({"error_types": {"counts": {"calculation": 2, "logic": 1}}}) == {"calculation": 2, "logic": 1}
    assert counts({}) == {}


def test_another_methods_sweep_averages_its_own_rates() -> None:
    with METHODS.scoped():
        register_method(MethodSpec("demo-sweep", "attack demo-sweep", "", "demo", package="tests.demo",
                                   headlines=(("hit", "lower"), ("miss", "higher"))))
        assert sweep_metrics("demo-sweep") == ("hit", "miss")  # no summary_rates: its headlines
        register_method(MethodSpec("demo-sweep", "attack demo-sweep", "", "demo", package="tests.demo",
                                   headlines=(("hit", "lower"),), summary_rates=("hit", "hit_rate2")), replace=True)
        assert sweep_metrics("demo-sweep") == ("hit", "hit_rate2")
        summaries = [{"hit": 0.5, "hit_rate2": 0.1, "ur": 0.9, "kinds": {"a": 1, "b": 3}},
                     {"hit": 0.7, "hit_rate2": 0.3, "ur": 0.9, "kinds": {"a": 1, "b": 1}}]
        row = aggregate(summaries, sweep_metrics("demo-sweep"), lambda s: s["kinds"])
        assert set(row) == {"n_seeds", "hit", "hit_rate2", "share:a", "share:b"}  # no MATCHA rate
        assert row["hit"]["mean"] == pytest.approx(0.6)
        assert row["share:a"]["mean"] == pytest.approx((0.25 + 0.5) / 2)
        result = {"attack": "demo-sweep", "grid": {"steps": [1]}, "table": [{"model": "m", "point": {"steps": 1}, **row}]}
        rows, columns = table_rows(result)
        assert columns == ["model", "steps", "n_seeds", "hit", "hit_rate2", "share:a", "share:b"]
        assert rows[0]["hit"].startswith("0.600 (")
    assert sweep_metrics("demo-sweep") == ()  # forgotten after the scope


def _sweep_dir(tmp_path: Path, row: dict[str, Any]) -> Path:
    data = {"attack": "demo-sweep", "grid": {}, "seeds": [0], "models": ["m"],
            "table": [{"model": "m", "point": {}, "n_seeds": 1, **row}], "runs": []}
    (tmp_path / "sweep.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def test_the_report_checks_any_methods_sweep_numbers(tmp_path: Path) -> None:
    good = load_sweep(_sweep_dir(tmp_path, {"hit": {"mean": 0.5, "std": None}, "share:a": {"mean": 1, "std": 0}}))
    assert good.data["table"][0]["hit"]["mean"] == 0.5
    with pytest.raises(DataError, match=r"field 'table\[0\]\.hit\.mean'"):
        load_sweep(_sweep_dir(tmp_path, {"hit": {"mean": "high", "std": None}}))
    with pytest.raises(DataError, match=r"field 'table\[0\]\.share:a'"):
        load_sweep(_sweep_dir(tmp_path, {"share:a": 0.5}))
