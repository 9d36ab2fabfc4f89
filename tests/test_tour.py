"""The quick-start's tour on a tiny model: every part runs through its library pipeline and resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.browser import open_report, wait_until_ready
from helpers.runs import units
from robusteval.cli.quickstart import print_variants
from robusteval.models import load_backend
from robusteval.runs import load_run
from robusteval.tour import TourConfig, run_tour, tour_report


def test_tour_runs_every_part_resumes_and_reports(tiny_trained_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    backend = load_backend(f"hf:{tiny_trained_dir}")
    config = TourConfig(attack_limit=2, max_new_tokens=24, variant_instances=1, variants_max_new_tokens=16,
                        wordimportance_examples=2, wordimportance_budget=10)
    results = run_tour(tmp_path / "tour", backend, config)
    assert set(results) == {"matcha", "variants", "robustness", "wordimportance"}
    commands = {part: load_run(r["run_dir"]).command for part, r in results.items()}
    assert commands == {"matcha": "attack matcha", "variants": "variants eval", "robustness": "robustness",
                        "wordimportance": "attack wordimportance"}
    assert results["matcha"]["n"] == 30 and results["matcha"]["n_attacked"] <= 2
    assert results["robustness"]["n"] == 20 and set(results["robustness"]["acc"]) == {"C-keyboard", "C-swap", "C-ocr"}
    assert results["wordimportance"]["n"] == 2 and results["variants"]["n_problems"] == 3
    original = results["variants"]["original"]  # each template's own problem, one instance each
    assert original["n_problems"] == original["n_instances"] == 3
    assert load_run(original["run_dir"]).command == "variants eval"
    # The variants' diagnosis compares every problem with its original run, and the quick-start prints it.
    diagnosis = results["variants"]["diagnosis"]
    assert diagnosis["original_run"] == original["run_dir"] and diagnosis["n_with_original"] == 3
    print_variants(results["variants"])
    assert f"VAR-MATH diagnosis: {diagnosis['line']}\n" in capsys.readouterr().out
    before = {part: units(Path(r["run_dir"])) for part, r in results.items()}
    again = run_tour(tmp_path / "tour", backend, config)
    assert {part: units(Path(r["run_dir"])) for part, r in again.items()} == before  # nothing recomputed
    # The last step: one report of every part, which opens in Chromium with every section drawn.
    report = tour_report(tmp_path / "tour", again)
    assert report == tmp_path / "tour" / "report.html"
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        sections = page.eval_on_selector_all("main > section", "s => s.map(e => e.id)")
        assert sections == ["matcha", "varmath", "robustness", "hardlabel", "compare"]
        for section in ("matcha", "varmath", "robustness"):  # the tiny model's attacks are all skipped
            assert page.locator(f"#{section} svg.chart :is(rect.bar, circle.point)").count() > 0
        assert opened.errors == [] and opened.requests == [report.resolve().as_uri()]
