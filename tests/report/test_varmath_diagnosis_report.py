"""The VAR-MATH diagnosis wherever runs are shown: the HTML report's diagnosis table and charts, `runs compare`
(table and CSV, each rate with n and interval) and `runs show`'s rates; the numbers are summary.json's, and a
run that stored no originals is paired with the original run given beside it."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.reportpage import Page
from helpers.runs import cli_inproc, summary
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.store import write_jsonl_atomic
from robusteval.variants import InstantiateConfig, VariantsEvalConfig, evaluate_variants, instantiate
from robusteval.variants.checks import original_instance
from robusteval.variants.template import load_template_file


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def runs(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``with``: variants with their originals asked in the same call, gold answers chosen from the model's own
    answers so that the problems are robust / original only / unsolved; ``paired``: the same variants without
    originals, and ``original``: the originals' run, given to the report beside it; ``other-originals``: another
    run of the same model on the same original problem ids (with other gold answers)."""
    root = tmp_path_factory.mktemp("diagnosis-report")
    model = load_backend(f"hf:{tiny_trained_dir}")
    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    instantiate(InstantiateConfig(templates, n=2, seed=0, out=str(root / "draft.jsonl")))
    originals = [original_instance(t).to_json() for t in load_template_file(templates).templates]  # type: ignore[union-attr]
    write_jsonl_atomic(root / "draft-originals.jsonl", originals)
    said: dict[str, Any] = {}
    for name in ("draft", "draft-originals"):
        evaluate_variants(VariantsEvalConfig(str(root / f"{name}.jsonl"),
                                             generation=GenerationOptions(max_new_tokens=12)),
                          model, root / name)
        said.update({row["id"]: row["extracted"] for row in _rows(root / name / "graded.jsonl")})
    right = {"cyclists", "cyclists_0", "cyclists_1", "fraction-sum"}
    assert all(said[iid] for iid in right)
    for name in ("draft", "draft-originals"):
        write_jsonl_atomic(root / f"{name.replace('draft', 'chosen')}.jsonl",
                           [{**row, "answer": said[row["id"]] if row["id"] in right else "-987654"}
                            for row in _rows(root / f"{name}.jsonl")])
    out = {"with": root / "with", "paired": root / "paired", "original": root / "original",
           "other-originals": root / "draft-originals"}  # the same problems graded against their true answers
    evaluate_variants(VariantsEvalConfig(str(root / "chosen.jsonl"),
                                         generation=GenerationOptions(max_new_tokens=12),
                                         originals=str(root / "chosen-originals.jsonl")), model, out["with"])
    evaluate_variants(VariantsEvalConfig(str(root / "chosen-originals.jsonl"),
                                         generation=GenerationOptions(max_new_tokens=12)),
                      model, out["original"])
    evaluate_variants(VariantsEvalConfig(str(root / "chosen.jsonl"),
                                         generation=GenerationOptions(max_new_tokens=12)),
                      model, out["paired"])
    return out


def test_the_report_shows_the_diagnosis_of_summary_json(runs: dict[str, Path], tmp_path: Path) -> None:
    stored = summary(runs["with"])["diagnosis"]
    assert [r["category"] for r in stored["problems"]] == ["robust", "original_only", "unsolved"]
    assert stored["label"] == "memorisation"
    page = Page(rv.report([runs["with"], runs["paired"], runs["original"]], out=tmp_path / "r.html")
                .read_text(encoding="utf-8"))
    caption = next(c for c in page.captions if c.startswith("Diagnosis"))
    rows = page.rows[caption]
    assert [row[1] for row in rows] == ["mostly memorisation"] * 2  # the paired run reads the same
    assert {row[3] for row in rows} == {"3"}  # problems with an original: both runs
    drop = stored["drop"]
    assert {drop["absolute"]["strict"]["value"], drop["relative"]["strict"]["value"]} <= page.values_from(
        runs["with"], table="Diagnosis")
    assert {share["value"] for share in stored["categories"].values() if share["value"] is not None} <= \
        page.values_from(runs["with"], table="Problems per diagnosis category")
    tips = [tip for value, tip in page.tables[caption] if value == drop["relative"]["strict"]["value"]
            and f"run: {runs['with']}" in tip]
    low, high = (bound * 100 for bound in drop["relative"]["strict"]["ci95"])
    assert tips and "n = 3" in tips[0] and f"95% CI {low:.4g}–{high:.4g}%" in tips[0]
    assert "paired bootstrap over problems" in tips[0]
    # A chart of the category shares per run (here 1/3 each of three categories), and the drops.
    assert stored["categories"]["robust"]["value"] in page.marks and drop["relative"]["strict"]["value"] in page.marks
    # The problem browser: each problem's category as a badge and a filter (the original run's problems: none).
    items = page.data["varmath-problems"]
    assert sorted(i["filters"].get("category", "-") for i in items) == sorted(
        ["robust", "original_only", "unsolved"] * 2 + ["-"] * 3)
    assert all(i["badges"][-1][0] == i["filters"]["category"] for i in items if "category" in i["filters"])


def test_runs_compare_and_runs_show_carry_the_diagnosis(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "board.csv"
    done = cli_inproc("runs", "compare", str(runs["with"]), str(runs["paired"]), str(runs["original"]), "--format", "csv",
               "--output", str(out))
    assert done.returncode == 0, done.stderr
    rows = {Path(r["run"]).name: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    stored = summary(runs["with"])["diagnosis"]
    for name in ("with", "paired"):
        row = rows[name]
        assert row["diagnosis"] == "mostly memorisation"
        assert float(row["strict_drop"]) == pytest.approx(stored["drop"]["relative"]["strict"]["value"])
        assert row["strict_drop_n"] == "3" and row["strict_drop_ci_low"] and row["strict_drop_ci_high"]
        assert float(row["share_original_only"]) == pytest.approx(1 / 3) and row["share_original_only_n"] == "3"
        assert float(row["share_robust_ci_high"]) == pytest.approx(stored["categories"]["robust"]["ci95"][1])
    assert rows["original"]["diagnosis"] == "-"  # a run on the original problems: nothing to diagnose
    table = cli_inproc("runs", "compare", str(runs["with"]), str(runs["original"]))
    assert table.returncode == 0, table.stderr
    assert "diagnosis" in table.stdout and "mostly memorisation" in table.stdout and "original only %" in table.stdout
    assert "variants, not original %" not in table.stdout  # a category nobody fell in is not a column
    show = cli_inproc("runs", "show", str(runs["with"]), "--json")
    rates = json.loads(show.stdout)["rates"]
    assert rates["drop[strict,relative]"].endswith("n_with_original = 3 (mostly memorisation)")
    assert rates["share[original only]"].startswith("33.3 % [") and "n_problems = 3" in rates["share[original only]"]


def test_the_original_column_is_the_one_the_diagnosis_used(runs: dict[str, Path], tmp_path: Path) -> None:
    """Another original run of the same model on the same problem ids is given first: the "with" run's original
    accuracy is still the one its diagnosis compared with (its own originals), with n and an interval."""
    stored = summary(runs["with"])["diagnosis"]["drop"]
    other = summary(runs["other-originals"])["loose"]
    assert other != stored["original"]
    page = Page(rv.report([runs["other-originals"], runs["with"]], out=tmp_path / "r.html").read_text("utf-8"))
    caption = next(c for c in page.captions if c.startswith("Accuracy"))
    row = next(r for r in page.rows[caption] if r[1] == "variants")
    low, high = (f"{b * 100:.1f}" for b in stored["original_ci95"])
    assert row[5] == f"{stored['original'] * 100:.1f} [{low}, {high}] n=3"

