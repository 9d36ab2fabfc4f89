"""The VAR-MATH leaderboard's direction: higher strict score ranks first, in ``runs compare`` (API and CSV; the
report's comparison section is the same leaderboard). Two tiny models on instances whose gold answers are the trained model's own: the
trained one is right on all, the random one on few, and the runs are given weakest first, so a reversed rule
would keep that order."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path

import pytest

import robusteval as rv
from helpers.runs import cli_inproc, summary
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.variants import InstantiateConfig, VariantsEvalConfig, evaluate_variants, instantiate

TITLE = "VAR-MATH: higher strict score ranks first"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_trained_dir: Path, tiny_llama_dir: Path) -> list[Path]:
    root = tmp_path_factory.mktemp("varmath-rank")
    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    instantiate(InstantiateConfig(templates, n=2, seed=0, out=str(root / "drawn.jsonl")))
    trained = load_backend(f"hf:{tiny_trained_dir}")
    evaluate_variants(VariantsEvalConfig(str(root / "drawn.jsonl"),
                                         generation=GenerationOptions(max_new_tokens=16)),
                      trained, root / "probe")
    graded = (root / "probe" / "graded.jsonl").read_text(encoding="utf-8").splitlines()
    answers = {row["id"]: row["extracted"] for row in map(json.loads, graded)}
    rows = [json.loads(line) for line in (root / "drawn.jsonl").read_text(encoding="utf-8").splitlines()]
    kept = [{**row, "answer": answers[row["id"]]} for row in rows if answers[row["id"]]]  # those it answered
    assert len({row["template"] for row in kept}) >= 2, "the trained model answered too few: the ranks would say nothing"
    instances = root / "instances.jsonl"
    instances.write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    out = {"random": root / "random", "trained": root / "trained"}
    evaluate_variants(VariantsEvalConfig(str(instances), generation=GenerationOptions(max_new_tokens=16)),
                      load_backend(f"hf:{tiny_llama_dir}"),
                      out["random"])
    evaluate_variants(VariantsEvalConfig(str(instances), generation=GenerationOptions(max_new_tokens=16)),
                      trained, out["trained"])
    return [out["random"], out["trained"]]  # weakest first


def test_higher_strict_ranks_first(runs: list[Path], tmp_path: Path) -> None:
    weak, strong = (summary(run)["strict"] for run in runs)
    assert strong == 1.0 > weak  # the trained model answers its own answers; the random one does not
    [board] = rv.compare_runs(runs, min_n=1, max_width=1)
    assert board.title == TITLE
    assert [(row["rank"], row["run"]) for row in board.rows] == [("1", str(runs[1])), ("2", str(runs[0]))]
    out = tmp_path / "board.csv"
    done = cli_inproc("runs", "compare", *map(str, runs), "--min-n", "1", "--max-interval-width", "1", "--format", "csv",
               "--output", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(row["rank"], float(row["strict"])) for row in rows] == [("1", strong), ("2", weak)]
