"""The Python API a notebook uses: ``import robusteval`` without the CLI, and the README's example."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.cli.common import backend_options
from robusteval.cli.main import build_parser, main
from robusteval.config import ConfigError
from robusteval.errors import UserError
from robusteval.judging import JudgeOptions
from robusteval.models.generation import GenerationOptions
from robusteval.models.hf_options import HFOptions
from robusteval.models.loading import load_backend
from robusteval.models.openai_api import OpenAIConfig
from robusteval.models.openai_options import OpenAIOptions
from robusteval.perturbations.spec import CandidateSpec

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
    summary = rv.evaluate(rv.EvalConfig(data=data, generation=GenerationOptions(max_new_tokens=12)), model,
                          tmp_path / "eval")
    run = rv.load_run(tmp_path / "eval")
    assert run.command == "eval" and run.summary == summary
    assert summary["n"] == 6 and summary["n_correct"] == sum(r["correct"] for r in run.records("answer_first"))
    assert run.identity["model"]["dtype"] == "float32" and run.identity["model"]["device"] == "cpu"
    assert summary["seeds"] == {"seed": 0} and summary["environment"]["torch"]

    config = rv.MatchaRunConfig(data=data, target_answer="clean", steps=1,
                                generation=GenerationOptions(max_new_tokens=16))
    matcha = rv.attack_matcha(config, model, tmp_path / "matcha")
    outcomes = rv.load_run(tmp_path / "matcha").records("matcha_outcome")
    assert matcha["n_attacked"] == sum(r["attacked"] for r in outcomes) > 0
    assert matcha["n"] == 6 and matcha["target_answer"] == "clean"
    assert rv.load_run(tmp_path / "matcha").to_dataframe("matcha_outcome").shape[0] == 6


def test_resuming_with_another_dtype_is_refused_naming_it(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl")), limit=2)
    config = rv.EvalConfig(data=data, generation=GenerationOptions(max_new_tokens=4))
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
    found = re.search(r"ACC (\S+) of n=(\d+); SR (\S+) of n_attacked=(\d+)", result.stdout)
    assert found is not None, result.stdout
    assert 0 <= float(found[1]) <= 1 and found[2] == "10"
    assert found[3] == "None" if found[4] == "0" else 0 <= float(found[3]) <= 1
    assert re.search(r"RB-index \S+ \(95% CI", result.stdout), result.stdout
    assert not re.search(r"\de-\d", result.stdout), result.stdout  # no float noise (5.551115123125783e-17)
    assert {p.name for p in (tmp_path / "runs").iterdir()} == {"eval", "matcha", "rb"}


# ------------------------------------------------------------------------------------- an API that validates
def _data(tmp_path: Path) -> rv.DataSpec:
    return rv.DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl")))


@pytest.mark.parametrize(("build", "message"), [
    (lambda d: rv.MatchaRunConfig(data=d, target_answer="cleen"),
     r"^MatchaRunConfig.target_answer: 'cleen' is not one of gold, clean, auto \(did you mean clean\?\)$"),
    (lambda d: rv.MatchaRunConfig(data=d, steps=-1), r"^MatchaRunConfig.steps: must be a number >= 0, got -1$"),
    (lambda d: rv.MatchaRunConfig(data=d, insert_ratio=0.0), r"^MatchaRunConfig.insert_ratio: must be a number > 0"),
    (lambda d: rv.MatchaRunConfig(data=d, attack_limit=-1), r"^MatchaRunConfig.attack_limit: must be a number >= 0"),
    (lambda d: rv.MatchaRunConfig(data=d, level="embedding", variant="gcg-suffix"),
     r"^MatchaRunConfig.variant: gcg-suffix is a token-level baseline; level=embedding takes"),
    (lambda d: rv.MatchaRunConfig(data=d, level="embedding", success_check="insertion-and-final"),
     r"^MatchaRunConfig.success_check: insertion-and-final is for the token level"),
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(judge="hff:model")),
     r"^JudgeOptions.judge: .*'hff:model' not understood"),
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(error_classifier="tiny")),
     r"^JudgeOptions.error_classifier: 'tiny' is not a model spec"),
    (lambda d: rv.MatchaRunConfig(data=d, generation=GenerationOptions(system_prompt="Be brief.")),
     r"^GenerationOptions.system_prompt: needs chat=True"),
    (lambda d: rv.EvalConfig(data=d, generation=GenerationOptions(max_new_tokens=0)),
     r"^GenerationOptions.max_new_tokens: must be a number >= 1, got 0$"),
    (lambda d: rv.EvalConfig(data=d, math_grader="sympy"), r"^EvalConfig.math_grader: unknown grader 'sympy'"),
    (lambda d: rv.DataSpec("gsm8kk", "x.jsonl"), r"^DataSpec.dataset: 'gsm8kk' is not one of .*did you mean gsm8k"),
    (lambda d: rv.DataSpec("jsonl", "x.jsonl", limit=0), r"^DataSpec.limit: must be a number > 0, got 0$"),
    (lambda d: rv.DataSpec("jsonl", "x.jsonl", answer_type="numbers"),
     r"^DataSpec.answer_type: 'numbers' is not one of number, yesno, math, text, label"),
    (lambda d: rv.DataSpec("jsonl", "x.jsonl", fields="question"), r"^DataSpec.fields: 'question' is not OURS=THEIRS"),
    (lambda d: rv.RobustnessConfig(data=d, sets="C-swap", label_mode="sof"),
     r"^RobustnessConfig.label_mode: 'sof' is not one of hard, soft"),
    (lambda d: rv.RobustnessConfig(data=d, sets="a=/no/such.jsonl"),
     r"^RobustnessConfig.sets: set a: no such file: /no/such.jsonl$"),
    (lambda d: rv.RobustnessConfig(data=d, sets="C-swap", perturbation=rv.PerturbationSpec(rate=1.5)),
     r"^PerturbationSpec.rate: must be a share within \[0, 1\], got 1.5$"),
    (lambda d: rv.PerturbationSpec(min_changes=5, max_changes=2),
     r"^PerturbationSpec.max_changes: 2 is below min_changes=5$"),
    (lambda d: rv.PerturbationSpec(language="fr"), r"^PerturbationSpec.language: 'fr' is not one of auto, zh, en"),
    (lambda d: rv.WordImportanceRunConfig(data=d, method="C-nope"),
     r"^WordImportanceRunConfig.method: unknown perturbation method 'C-nope'"),
    (lambda d: rv.WordImportanceRunConfig(data=d, method="C-swap", confidence="soft"),
     r"^WordImportanceRunConfig.confidence: 'soft' is not one of auto, logprob, sample, greedy"),
    (lambda d: rv.TransferConfig(source="runs/x", generation=GenerationOptions(temperature=-0.5)),
     r"^GenerationOptions.temperature: must be a number >= 0, got -0.5$"),
    (lambda d: rv.OrsConfig(()), r"^OrsConfig.runs: name at least one word-importance attack run directory$"),
    (lambda d: rv.OrsConfig(("runs/x",), beta_cap=0), r"^OrsConfig.beta_cap: must be a number >= 1, got 0$"),
    (lambda d: rv.AuditConfig("/no/such.jsonl", judging=rv.JudgeOptions(judge="arith")), r"^AuditConfig.labelled: no such file: /no/such.jsonl$"),
    (lambda d: rv.variants.InstantiateConfig("t.yaml", compat="var-math", exclude_original=True),
     r"^InstantiateConfig.exclude_original: cannot be combined with compat=var-math"),
    (lambda d: rv.variants.VariantsEvalConfig("i.jsonl", generation=GenerationOptions(top_p=0.0)),
     r"^GenerationOptions.top_p: must be within"),
    (lambda d: rv.variants.GradingConfig(bootstrap_rounds=-1),
     r"^GradingConfig.bootstrap_rounds: must be a number >= 0, got -1$"),
])
def test_misuse_fails_when_the_config_is_built_naming_the_field(tmp_path: Path, build: Any, message: str) -> None:
    data = _data(tmp_path)
    with pytest.raises(ConfigError, match=message) as info:
        build(data)
    assert "--" not in str(info.value)  # the API's words, not the command line's


def test_the_command_line_names_the_flag_for_the_same_check(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    questions = str(_questions(tmp_path / "q.jsonl"))
    args = ["eval", "--model", "hf:/does/not/exist", "--dataset", "jsonl", "--data-file", questions,
            "--system-prompt", "Be brief.", "--out", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("robusteval: error: --system-prompt: needs --chat (a system prompt is a turn of the chat "
                   "conversation)")
    assert not (tmp_path / "run").exists()
    assert main([*args[:-4], "--max-new-tokens", "0", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == "robusteval: error: --max-new-tokens: must be a number >= 1, got 0"


def test_a_config_error_renders_mentions_for_each_audience() -> None:
    error = ConfigError(rv.MatchaRunConfig, "variant", "{level=embedding} with {random_start=False}, {chat=True} "
                        "and {limit}, {nothing}")
    assert str(error) == ("MatchaRunConfig.variant: level=embedding with random_start=False, chat=True and limit, "
                          "{nothing}")
    # random_start is a --config key (its flag deprecated, issue 38): the command line names the key.
    assert error.cli_message() == ("--variant: --level embedding with random_start=False, --chat and --limit, "
                                   "{nothing}")
    switch = ConfigError(rv.WordImportanceRunConfig, "rank", "{rank=False}")
    assert switch.cli_message() == "--no-rank: --no-rank"  # a default-True switch: its --no-... flag alone


def test_defaults_are_the_command_lines(tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", str(_questions(tmp_path / "q.jsonl")), answer_type="label")
    config = rv.RobustnessConfig(data=data, sets="C-swap")  # data and sets are all it needs
    assert config.perturbation == rv.PerturbationSpec() and config.label_mode == "hard"
    assert rv.RobustnessConfig(data, "C-swap") == config  # and in that order
    assert rv.WordImportanceRunConfig(data=data, method="C-swap").perturbation == CandidateSpec()


def test_load_model_takes_the_backends_options_and_refuses_unknown_ones(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^load_model\(\): unknown model option dtpye \(did you mean dtype\?\) for the "
                       r"hf backend; hf options: dtype, "):
        rv.load_model(f"hf:{tmp_path}", dtpye="bfloat16")
    with pytest.raises(UserError, match="unknown model option"):
        rv.describe_model(f"hf:{tmp_path}", dtpye="bfloat16")
    with pytest.raises(UserError, match=r"unknown model option max_concurency \(did you mean max_concurrency\?\) "
                       r"for the openai backend"):
        load_backend("openai:m@http://127.0.0.1:9/v1", max_concurency=2)
    with pytest.raises(UserError, match=r"^load_model\(\): timeout: expected a number, got '30' \(openai backend\)$"):
        rv.load_model(f"hf:{tmp_path}", timeout="30")  # another backend's option, still checked


def test_the_command_lines_defaults_are_the_options_classes() -> None:
    """Every option the command line passes by default is a field of the backend's options class, with the
    class's default: one declaration, no second spelling of a default."""
    cli_defaults = backend_options(build_parser().parse_args(["eval"]))
    assert cli_defaults  # the common flags
    for options_type in (HFOptions, OpenAIOptions):
        fields = {f.name: f for f in dataclasses.fields(options_type)}
        for name, value in cli_defaults.items():
            assert fields[name].default == value, (options_type.__name__, name)
    assert OpenAIConfig is OpenAIOptions  # the old name of the openai options


def test_answer_first_and_variant_evaluation_have_distinct_names() -> None:
    from robusteval.evals.answer_first import evaluate
    from robusteval.variants.pipeline import evaluate_variants

    assert rv.evaluate is evaluate and rv.variants.evaluate_variants is evaluate_variants
    assert not hasattr(rv.variants, "evaluate") and "evaluate" not in rv.variants.__all__
