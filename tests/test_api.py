"""The Python API a notebook uses: ``import robusteval`` without the CLI, and the README's example."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import robusteval as rv
from robusteval.errors import UserError

README = Path(__file__).resolve().parents[1] / "README.md"


def _questions(path: Path) -> Path:
    rows = [{"question": f"Tom has {i} apples and gets {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_import_does_not_load_torch() -> None:
    code = "import sys, robusteval as rv; rv.DataSpec; rv.load_run; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_pipelines_run_without_the_cli(tiny_trained_dir: Path, tmp_path: Path) -> None:
    model = rv.load_model(f"hf:{tiny_trained_dir}")
    data = rv.DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl")))
    summary = rv.evaluate(rv.EvalConfig(data=data, max_new_tokens=12), model, tmp_path / "eval")
    run = rv.load_run(tmp_path / "eval")
    assert run.command == "eval" and run.summary == summary
    assert summary["n"] == 6 and summary["n_correct"] == sum(r["correct"] for r in run.records("answer_first"))
    assert run.identity["model"]["dtype"] == "float32" and run.identity["model"]["device"] == "cpu"
    assert summary["seeds"] == {"seed": 0} and summary["environment"]["torch"]

    config = rv.MatchaRunConfig(data=data, target_answer="clean", steps=1, max_new_tokens=16)
    matcha = rv.attack_matcha(config, model, tmp_path / "matcha")
    outcomes = rv.load_run(tmp_path / "matcha").records("matcha_outcome")
    assert matcha["n_attacked"] == sum(r["attacked"] for r in outcomes) > 0
    assert matcha["n"] == 6 and matcha["target_answer"] == "clean"
    assert rv.load_run(tmp_path / "matcha").to_dataframe("matcha_outcome").shape[0] == 6


def test_resuming_with_another_dtype_is_refused_naming_it(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl")), limit=2)
    config = rv.EvalConfig(data=data, max_new_tokens=4)
    rv.evaluate(config, rv.load_model(f"hf:{tiny_llama_dir}", dtype="float32"), tmp_path / "run")
    with pytest.raises(UserError, match=r"model\.dtype: stored 'float32', now 'bfloat16'"):
        rv.evaluate(config, rv.load_model(f"hf:{tiny_llama_dir}", dtype="bfloat16"), tmp_path / "run")


def test_readme_python_example_runs(tiny_trained_dir: Path, tmp_path: Path) -> None:
    """The README's Python block, on the bundled samples, with the model pointed at a local one."""
    block = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block is not None, "README has no Python example"
    assert "../shared" not in block.group(1)
    code = block.group(1).replace("hf:./my-model", f"hf:{tiny_trained_dir}").replace("runs/", f"{tmp_path}/runs/")
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if "PYTHONPATH" in os.environ:  # a checkout run without installing it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    found = re.search(r"ACC (\S+) of n=(\d+); SR (\S+) of n_rated=(\d+)", result.stdout)
    assert found is not None, result.stdout
    assert 0 <= float(found[1]) <= 1 and found[2] == "10"
    assert found[3] == "None" if found[4] == "0" else 0 <= float(found[3]) <= 1
    assert re.search(r"RB-index \S+ \(95% CI", result.stdout), result.stdout
    assert {p.name for p in (tmp_path / "runs").iterdir()} == {"eval", "matcha", "rb"}
