"""Sweeps: one resumable run per (model, point, seed), mean(std) over seeds, the clean pass computed once."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from helpers.runs import units
from robusteval.attacks.matcha.pipeline import MatchaRunConfig
from robusteval.cli.main import main
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.metrics.stats import mean_std
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.models.tiny import build_tiny_llama
from robusteval.studies.sweep import parse_grid, sweep


def _questions(path: Path) -> Path:
    rows = [{"question": f"Tom has {i} apples and buys {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_mean_and_sample_std() -> None:
    assert mean_std([0.2, 0.4, 0.6]) == pytest.approx((0.4, 0.2))  # sqrt(((-.2)^2 + 0 + .2^2) / 2) = 0.2
    assert mean_std([0.5]) == (0.5, None) and mean_std([None, None]) == (None, None)


def test_grid_values_are_typed_and_checked() -> None:
    grid = parse_grid(["steps=1,3", "insert-ratio=0.1,0.25", "variant=full,random-insert"], MatchaRunConfig)
    assert grid == {"steps": [1, 3], "insert_ratio": [0.1, 0.25], "variant": ["full", "random-insert"]}
    with pytest.raises(UserError, match="'colour' is not a setting"):
        parse_grid(["colour=red"], MatchaRunConfig)
    with pytest.raises(UserError, match="use --seeds"):
        parse_grid(["seed=1,2"], MatchaRunConfig)
    with pytest.raises(UserError, match="'x' is not a int"):
        parse_grid(["steps=1,x"], MatchaRunConfig)


def test_sweep_runs_every_point_and_seed_and_reuses_the_clean_pass(tiny_trained_dir: Path, tmp_path: Path) -> None:
    config = MatchaRunConfig(data=DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl"))), target_answer="clean",
                             generation=GenerationOptions(max_new_tokens=24))
    backend = load_backend(f"hf:{tiny_trained_dir}")
    result = sweep("matcha", config, tmp_path / "sweep", grid={"steps": [1, 2]}, seeds=[0, 1], backend=backend)
    assert len(result["runs"]) == 4 and len(result["table"]) == 2
    for row in result["table"]:
        runs = [r for r in result["runs"] if r["point"] == row["point"]]
        for name in ("acc", "ur", "sr", "wr"):
            values = [r[name] for r in runs if r[name] is not None]
            if len(values) == 2:
                assert row[name]["mean"] == pytest.approx(statistics.mean(values))
                assert row[name]["std"] == pytest.approx(statistics.stdev(values))
    # Every run directory is a complete, ordinary run with its own identity (steps, seed).
    dirs = [Path(r["run_dir"]) for r in result["runs"]]
    identities = [json.loads((d / "summary.json").read_text())["hyperparameters"] for d in dirs]
    assert sorted((h["steps"], h["seed"]) for h in identities) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    # The clean pass was computed once: the other runs hold copies with the first run's creation times.
    clean = [sorted(created for _, _, created in units(d, "matcha_clean")) for d in dirs]
    assert all(times == clean[0] for times in clean) and len(clean[0]) == 3
    on_disk = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert on_disk["table"] == json.loads(json.dumps(result["table"]))
    # Re-running resumes: nothing new is computed.
    before = [units(d) for d in dirs]
    sweep("matcha", config, tmp_path / "sweep", grid={"steps": [1, 2]}, seeds=[0, 1], backend=backend)
    assert [units(d) for d in dirs] == before


def test_cross_scale_command_compares_models(tiny_trained_dir: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    other = build_tiny_llama(tmp_path / "other", seed=1, train_steps=60)
    data = _questions(tmp_path / "q.jsonl")
    args = ["sweep", "matcha", "--models", f"hf:{tiny_trained_dir},hf:{other}", "--dataset", "jsonl",
            "--data-file", str(data), "--target-answer", "clean", "--max-new-tokens", "16", "--steps", "1",
            "--seeds", "0", "--out", str(tmp_path / "scale")]
    assert main(args) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "scale" / "sweep.json").read_text())
    assert [row["model"] for row in result["table"]] == [f"hf:{tiny_trained_dir}", f"hf:{other}"]
    assert "sweep: matcha" in out and "model" in out
    assert main([*args[:2], "--model", f"hf:{other}", *args[4:]]) == 0  # one model with --model works too
