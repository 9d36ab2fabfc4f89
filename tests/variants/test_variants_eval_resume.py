"""`variants eval` end to end on a tiny local model, including a SIGKILL in the middle and a resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from variants_testlib import cli_command, run_cli

from robusteval.variants.sampler import instantiate
from robusteval.variants.template import load_template_file

N_INSTANCES = 15
SAMPLES = 2


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import torch

    from robusteval.models.tiny import build_tiny_llama

    # One thread: on a small shared machine, thread contention makes a tiny model ~15x slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield build_tiny_llama(tmp_path_factory.mktemp("variants_tiny") / "model")
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def instances_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    example = resources.files("robusteval.variants") / "example_templates.yaml"
    templates = load_template_file(str(example)).templates
    instances, problems, _ = instantiate(templates, 5, 42)
    assert not problems and len(instances) == N_INSTANCES
    path = tmp_path_factory.mktemp("variants_inst") / "instances.jsonl"
    path.write_text("".join(json.dumps(i.to_json()) + "\n" for i in instances))
    return path


def _args(model: Path, instances: Path, out: Path) -> list[str]:
    return [
        "variants",
        "eval",
        "--model",
        f"hf:{model}",
        "--instances",
        str(instances),
        "--out",
        str(out),
        "--samples",
        str(SAMPLES),
        "--max-new-tokens",
        "24",
        "--batch-size",
        "1",
        "--device",
        "cpu",
        "--bootstrap-rounds",
        "200",
    ]


def _units(db: Path) -> dict[str, float]:
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return dict(conn.execute("SELECT key, created FROM units"))
    except sqlite3.OperationalError:  # database not created yet
        return {}


def test_eval_survives_sigkill_and_resumes(
    tiny_model: Path, instances_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    total = N_INSTANCES * SAMPLES
    out = tmp_path / "run"
    db = out / "results.sqlite"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        cli_command(*_args(tiny_model, instances_file, out)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(_units(db)) < 3:
            time.sleep(0.02)
        assert proc.poll() is None, (
            "the run finished before it could be killed: " + proc.stderr.read().decode()[-2000:]
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = _units(db)
    assert 3 <= len(before) < total
    assert not (out / "summary.json").exists()

    assert run_cli(_args(tiny_model, instances_file, out), monkeypatch) == 0
    after = _units(db)
    assert len(after) == total
    assert all(after[key] == created for key, created in before.items())  # stored units were not redone

    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["n_instances"] == N_INSTANCES
        and summary["n_problems"] == 3
        and summary["n_samples"] == SAMPLES
    )
    assert 0.0 <= summary["strict"] <= summary["loose"] <= 1.0
    assert summary["strict_ci95"] is not None and summary["loose_ci95"] is not None
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == total

    # An uninterrupted run gives the same generations (seeded sampling, batch size 1).
    fresh = tmp_path / "fresh"
    assert run_cli(_args(tiny_model, instances_file, fresh), monkeypatch) == 0
    assert (fresh / "predictions.jsonl").read_text() == (out / "predictions.jsonl").read_text()

    # Re-using the directory with other settings is refused instead of mixing two runs.
    changed = [
        *_args(tiny_model, instances_file, out)[:-2],
        "--bootstrap-rounds",
        "200",
        "--max-new-tokens",
        "8",
    ]
    assert run_cli(changed, monkeypatch) == 2
