"""Paths a run recorded relative to where its command ran are found from wherever the report is built, and a
copied run or sweep reads its own files, not the original's."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

import robusteval as rv
from helpers.reportpage import Page
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.report.collect import collect
from robusteval.runs import load_run
from robusteval.variants import InstantiateConfig, VariantsEvalConfig, evaluate_variants, instantiate


def _values_shown(report: Path) -> list[str]:
    items = Page(report.read_text(encoding="utf-8")).data["varmath-problems"]
    return [row[1] for item in items for block in item["blocks"] for row in block.get("rows", ())
            if row[0] == "instance"]


def test_relative_instances_are_found_from_another_directory(tiny_trained_dir: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # as the quick-start: every path relative to the working directory
    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    instantiate(InstantiateConfig(templates, n=1, seed=0, out="work/instances.jsonl"))
    evaluate_variants(VariantsEvalConfig("work/instances.jsonl",
                                         generation=GenerationOptions(max_new_tokens=4)),
                      load_backend(f"hf:{tiny_trained_dir}"), "work/run")
    assert load_run(tmp_path / "work" / "run").identity["instances"] == "work/instances.jsonl"
    lines = Path("work/instances.jsonl").read_text(encoding="utf-8").splitlines()
    values = {row["id"]: row["values"] for row in map(json.loads, lines)}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    shown = _values_shown(rv.report([tmp_path / "work"], out="r.html"))
    assert len(shown) == len(values) and all("values not recorded" not in text for text in shown)
    first, first_values = next(iter(values.items()))
    assert f"{first}: " + ", ".join(f"{k} = {v}" for k, v in first_values.items()) in shown
    # A copy reads its own instances file; one whose content changed is not taken for it.
    shutil.copytree(tmp_path / "work", tmp_path / "copy" / "work")
    (tmp_path / "work" / "instances.jsonl").write_text("", encoding="utf-8")
    assert all("values not recorded" not in text for text in
               _values_shown(rv.report([tmp_path / "copy" / "work"], out="copy.html")))
    (tmp_path / "copy" / "work" / "instances.jsonl").write_text('{"id": "x", "values": {}}\n', encoding="utf-8")
    assert all("values not recorded" in text for text in
               _values_shown(rv.report([tmp_path / "copy" / "work"], out="changed.html")))


def test_a_copied_sweep_reads_its_own_runs(llm_runs: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "sweep-copy"
    shutil.copytree(llm_runs["sweep"], copy)
    sweep = collect([copy]).sweeps[0]
    assert len(sweep.runs) == len(sweep.data["runs"]) == 4
    assert all(run.path.is_relative_to(copy) for run in sweep.runs)
