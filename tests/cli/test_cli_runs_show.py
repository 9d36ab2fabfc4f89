"""`runs show DIR`: a short human summary by default (issue 28 polish: it printed 274 lines of JSON), the whole
record with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robusteval as rv
from robusteval.cli.main import main
from robusteval.models.generation import GenerationOptions


@pytest.fixture(scope="module")
def eval_run(tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs_show")
    data = root / "q.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"Tom has {i} apples and gets 2 more. How many?", "answer": str(i + 2)})
            + "\n"
            for i in range(4)
        ),
        encoding="utf-8",
    )
    out = root / "run"
    rv.evaluate(
        rv.EvalConfig(data=rv.DataSpec("jsonl", str(data)), generation=GenerationOptions(max_new_tokens=4)),
        rv.load_model(f"hf:{tiny_llama_dir}", device="cpu"),
        out,
    )
    return out


def test_runs_show_is_a_short_summary(
    eval_run: Path, tiny_llama_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "show", str(eval_run)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert len(lines) <= 12, text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert lines[0] == f"{eval_run}: eval, finished"
    assert (
        f"model      {tiny_llama_dir.parent.name}/model  ({tiny_llama_dir}; dtype float32, device cpu)"
        in text
    )
    # The headline number with its interval and n, as --json's "rates" gives it.
    full = _full(eval_run, capsys)
    assert f"rates      acc: {full['rates']['acc']}" in text and "n = 4" in full["rates"]["acc"]
    assert "units      answer_first 4" in text
    assert lines[-1] == f"(everything, identity and summary included: robusteval runs show {eval_run} --json)"


def test_a_matcha_run_says_what_it_left_out_and_no_empty_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers.reportstores import matcha_store

    kinds = ["unsuccessful"] * 6 + ["success"] * 3 + ["skip:no answer in the clean completion"] * 3
    run = matcha_store(tmp_path / "m", 12, kinds=kinds, model_name="hf:/x/y/model")
    assert main(["runs", "show", str(run)]) == 0
    text = capsys.readouterr().out
    assert "  rates      acc: 100.0 % [75.8, 100.0], n = 12" in text
    assert "             sr: 33.3 % [12.1, 64.6], n_attacked = 9" in text
    assert "  outcomes   changed 0 + broken 3 + intact 6 + unjudged 0 + clean wrong 0 = 9" in text
    assert "  left out   skip_reasons: no answer in the clean completion 3" in text
    assert all(not line.rstrip().endswith(":") for line in text.splitlines())  # no field without a value


def _full(run: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["runs", "show", str(run), "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_runs_show_json_is_the_whole_record(eval_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = _full(eval_run, capsys)
    assert set(full) >= {"run_dir", "overview", "rates", "identity", "info", "units", "summary"}
    assert full["summary"]["n"] == 4  # type: ignore[index]
