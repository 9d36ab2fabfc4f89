"""``--model-args`` on the real command line: a typo is one line and exit 2 before any model loads; a replaced
backend flag still runs, with its notice, and a run resumed with ``--model-args`` sees the same identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.datafiles import write_gsm8k
from helpers.runs import cli, units
from robusteval.cli.main import main


def eval_args(model_dir: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", f"hf:{model_dir}", "--dataset", "gsm8k", "--data-file", str(data), "--limit", "2",
            "--max-new-tokens", "2", "--device", "cpu", "--out", str(out), *extra]


def test_a_misspelt_model_arg_is_one_line_and_exit_2(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = write_gsm8k(tmp_path / "test.jsonl", 2)
    result = cli(*eval_args(tiny_llama_dir, data, tmp_path / "run", "--model-args", "decodr=dynamic"))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("robusteval: error:")]
    assert errors == [line for line in result.stderr.splitlines() if line.strip()], result.stderr
    assert errors[0].startswith("robusteval: error: --model-args: unknown model option decodr (did you mean "
                                "decoder?) for the hf backend; hf options: prefix_cache, decoder, "), errors
    assert not (tmp_path / "run").exists()  # refused before anything was made


def test_a_replaced_flag_runs_and_resumes_under_model_args(tiny_llama_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    data, out = write_gsm8k(tmp_path / "test.jsonl", 2), tmp_path / "run"
    assert main(eval_args(tiny_llama_dir, data, out, "--decoder", "dynamic")) == 0
    err = capsys.readouterr().err
    assert "robusteval: --decoder is deprecated (accepted until the next release): use --model-args decoder=dynamic" in err
    done = units(out)
    assert done
    # The same settings through --model-args: the same identity, so the run resumes with nothing to redo.
    assert main(eval_args(tiny_llama_dir, data, out, "--model-args", "decoder=dynamic,prefix_cache=false")) == 0
    assert "notice" not in capsys.readouterr().err
    assert units(out) == done
