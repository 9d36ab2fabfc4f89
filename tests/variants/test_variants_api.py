"""The VAR-MATH pipelines used from Python, without the command line: instantiate -> evaluate -> score."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from variants_testlib import var_template

import robusteval.variants as rv
from helpers.shared import needs_modules
from robusteval.errors import UserError
from robusteval.models import GENERATE, Generation
from robusteval.models.generation import GenerationOptions
from robusteval.seeding import derive_seed
from robusteval.store import RunStore


@pytest.fixture(scope="module")
def example_templates() -> Iterator[Path]:
    with resources.as_file(resources.files("robusteval.variants") / "example_templates.yaml") as path:
        yield path


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_instantiate_evaluate_and_score_agree(example_templates: Path, tiny_llama_dir: Path,
                                              tmp_path: Path) -> None:
    from robusteval.models import load_backend

    instances_file = tmp_path / "instances.jsonl"
    made = rv.instantiate(rv.InstantiateConfig(str(example_templates), n=2, out=str(instances_file)))
    assert not made.problems and made.n_templates == 3 and len(made.instances) == 6
    assert made.seed == 0 and made.written == [instances_file]
    assert _jsonl(instances_file) == made.rows()

    backend = load_backend(f"hf:{tiny_llama_dir}", device="cpu")
    grading = rv.GradingConfig(bootstrap_rounds=50, bootstrap_seed=3)
    config = rv.VariantsEvalConfig(str(instances_file), samples=2,
                                   generation=GenerationOptions(max_new_tokens=8), seed=5, grading=grading)
    run_dir = tmp_path / "run"  # a path: the pipeline checks, locks and opens the store itself
    summary = rv.evaluate_variants(config, backend, run_dir, batch_size=4)
    assert summary == json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["seeds"] == {"seed": 5, "bootstrap_seed": 3}
    assert summary["n_instances"] == 6 and summary["n_problems"] == 3 and summary["n_samples"] == 2

    # The summary is exactly what scoring the stored predictions gives, from objects or from the files.
    stored = _jsonl(run_dir / "predictions.jsonl")
    assert len(stored) == 12
    predictions: dict[str, list[str]] = {}
    for row in sorted(stored, key=lambda r: (r["id"], r["sample"])):
        predictions.setdefault(row["id"], []).append(row["prediction"])
    scores, graded = rv.score(made.instances, predictions, grading)
    assert {key: summary[key] for key in scores} == scores
    assert graded == _jsonl(run_dir / "graded.jsonl")
    from_files, _ = rv.score(instances_file, run_dir / "predictions.jsonl", grading)
    assert from_files == scores

    # Sample k of every instance was asked with the seed derived from (seed, "variants-sample", k).
    with RunStore.open_existing(run_dir) as store:
        units = store.records("variants_generation")
        identity = store.identity
    assert len(units) == 12
    assert identity["command"] == "variants eval" and identity["seed"] == 5
    assert identity["model"] == backend.identity
    assert rv.pipeline.sample_seed(5, 1) == derive_seed(5, "variants-sample", 1)

    # The same call resumes (nothing new to generate); other settings are refused before anything runs.
    assert rv.evaluate_variants(config, backend, run_dir, batch_size=4)["strict"] == summary["strict"]
    more = dataclasses.replace(config, generation=dataclasses.replace(config.generation, max_new_tokens=4))
    with pytest.raises(UserError):
        rv.evaluate_variants(more, backend, run_dir)


class Scripted:
    """A backend that answers each instance with a fixed completion, found by the question in the prompt."""

    name = "scripted"
    capabilities = frozenset({GENERATE})

    def __init__(self, completions: dict[str, str]):
        self.completions = completions

    def generate(self, requests: Any) -> list[Generation]:
        return [Generation(next(c for q, c in self.completions.items() if q in r.prompt), "stop") for r in requests]


@needs_modules("math_verify", "latex2sympy2_extended", "antlr4")
def test_a_finished_run_is_regraded_by_another_grader(example_templates: Path, tmp_path: Path) -> None:
    instances_file = tmp_path / "instances.jsonl"
    made = rv.instantiate(rv.InstantiateConfig(str(example_templates), n=1, out=str(instances_file)))
    # Completions whose verdicts are known: a spelled-out gold (the builtin grader reads "two" as 2, math-verify
    # as letters: bench/RESULTS.md, grading crosscheck), a boxed gold (right for both), a wrong number.
    said = {"cyclists_0": "The answer is two.", "fraction-sum_0": "So m + n = 221: \\boxed{221}.",
            "ladder_0": "The answer is 20."}
    assert {i.id: i.answer for i in made.instances} == {"cyclists_0": 2, "fraction-sum_0": 221, "ladder_0": 21.0}
    backend = Scripted({i.question: said[i.id] for i in made.instances})
    config = rv.VariantsEvalConfig(str(instances_file), generation=GenerationOptions(max_new_tokens=8))
    run_dir = tmp_path / "run"
    first = rv.evaluate_variants(config, backend, run_dir)
    assert {row["id"]: row["correct"] for row in _jsonl(run_dir / "graded.jsonl")} == {
        "cyclists_0": True, "fraction-sum_0": True, "ladder_0": False}
    with RunStore.open_existing(run_dir) as store:
        stored = store.records("variants_generation")
    # Grading is not part of the identity: the same generations, graded anew by math-verify.
    regraded = rv.evaluate_variants(dataclasses.replace(config, grading=rv.GradingConfig(math_grader="math-verify")),
                           backend, run_dir)
    with RunStore.open_existing(run_dir) as store:
        assert store.records("variants_generation") == stored
        assert "math_grader" not in store.identity
    assert first["grading"]["math_grader"] == "builtin" and regraded["grading"]["math_grader"] == "math-verify"
    rows = _jsonl(run_dir / "graded.jsonl")
    assert len(rows) == 3 and {row["grader"] for row in rows} == {"math-verify"}
    assert {row["id"]: row["correct"] for row in rows} == {
        "cyclists_0": False, "fraction-sum_0": True, "ladder_0": False}


def test_validate_and_import_return_their_reports(example_templates: Path, tmp_path: Path) -> None:
    report = rv.validate(rv.ValidateConfig((example_templates,), json=str(tmp_path / "report.json")))
    assert report.counts == {"ok": 3, "mismatch": 0, "error": 0, "unchecked": 0} and not report.failed
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == report.to_json()

    csv = tmp_path / "t.csv"
    csv.write_text("not,a,var-math,csv\n", encoding="utf-8")
    with pytest.raises(UserError, match="not a VAR-MATH template CSV"):
        rv.import_templates(rv.ImportConfig(str(csv)))


def test_import_keeps_the_rows_that_translate(tmp_path: Path) -> None:
    out = tmp_path / "aime25.yaml"
    report = rv.import_templates(rv.ImportConfig(str(var_template("aime25")), out=str(out)))
    assert [p.template_id for p in report.problems] == ["3"] and len(report.templates) == 29
    assert report.written == out
    assert len(rv.load_template_file(out).templates) == 29


def test_the_model_free_pipelines_do_not_import_torch(example_templates: Path, tmp_path: Path) -> None:
    samples = resources.files("robusteval.data.samples") / "math.jsonl"
    script = (
        "import sys\n"
        "import robusteval.variants as rv\n"
        f"made = rv.instantiate(rv.InstantiateConfig({str(example_templates)!r}, n=1))\n"
        f"rv.validate(rv.ValidateConfig({str(example_templates)!r}))\n"
        "rv.score(made.instances, {i.id: ['\\\\boxed{1}'] for i in made.instances})\n"
        f"rv.draft(rv.DraftConfig(data_file={str(samples)!r}, out='drafts.yaml'))\n"
        "assert rv.check(rv.CheckConfig(['drafts.yaml'])).failed\n"  # the drafts' answers are unwritten
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
