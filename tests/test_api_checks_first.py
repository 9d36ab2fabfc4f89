"""Every value of a pipeline's call is refused before any model loads, through the Python API as on the command line,
and a misspelt name (a perturbation set or method, a template, exemplars, a judge) gets the closest known one.

The model is given as a spec string naming a directory that does not exist: were it loaded first, the refusal
would be "no such model directory"; every test asserts the value's own refusal instead, and that no run directory
was made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robusteval as rv
from helpers.runs import cli_inproc
from robusteval.config import ConfigError
from robusteval.errors import UserError
from robusteval.evals.prompt_options import PromptOptions
from robusteval.judging import JudgeOptions
from robusteval.perturbations.pipeline import PerturbConfig

NO_MODEL = "hf:/does/not/exist/model"


def _yesno(path: Path) -> Path:
    rows = [{"id": f"q{i}", "question": f"Is {i} an even number of apples in the basket?",
             "answer": "yes" if i % 2 == 0 else "no"} for i in range(4)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def data(tmp_path: Path) -> rv.DataSpec:
    return rv.DataSpec("jsonl", str(_yesno(tmp_path / "q.jsonl")), answer_type="label")


def test_the_issues_example_is_refused_when_the_config_is_built(data: rv.DataSpec) -> None:
    with pytest.raises(ConfigError, match=r"^RobustnessConfig.sets: unknown perturbation method 'C-swpa' "
                                          r"\(did you mean C-swap\?\); available: "):
        rv.RobustnessConfig(data=data, sets="C-keyboard,C-swpa")
    with pytest.raises(ConfigError, match=r"^RobustnessConfig.sets: .*'W-synonim' \(did you mean W-synonym\?\)"):
        rv.RobustnessConfig(data=data, sets=("C-keyboard", "W-synonim"))


@pytest.mark.parametrize(("build", "message"), [
    (lambda d: rv.RobustnessConfig(data=d, sets="C-swap", prompt=PromptOptions(template="yesn")),
     r"^PromptOptions.template: template yesn: no such file and not a built-in template .*\(did you mean yesno\?\)$"),
    (lambda d: rv.WordImportanceRunConfig(data=d, method="C-swp"),
     r"^WordImportanceRunConfig.method: unknown perturbation method 'C-swp' \(did you mean C-swap\?\)"),
    (lambda d: rv.WordImportanceRunConfig(data=d, method="C-swap", prompt=PromptOptions(template="nli-z")),
     r"^PromptOptions.template: .*\(did you mean nli-zh\?\)$"),
    (lambda d: PerturbConfig(data=d, method="C-keybord"),
     r"^PerturbConfig.method: unknown perturbation method 'C-keybord' \(did you mean C-keyboard\?\)"),
    (lambda d: rv.EvalConfig(data=d, prompt=PromptOptions(exemplars="mth")),
     r"^PromptOptions.exemplars: mth: exemplar file not found .*\(did you mean math\?\)$"),
    (lambda d: rv.MatchaRunConfig(data=d, prompt=PromptOptions(exemplars="yesn")),
     r"^PromptOptions.exemplars: .*\(did you mean yesno\?\)$"),
    (lambda d: rv.TransferConfig(source="runs/x", prompt=PromptOptions(exemplars="mat")),
     r"^PromptOptions.exemplars: .*\(did you mean math\?\)$"),
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(judge="arth")),
     r"^JudgeOptions.judge: .*unknown judge 'arth' \(did you mean arith\?\)"),
    # The spec grammar splits only before a known judge: the misspelt part is named, not the rest with it.
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(judge="vote:arith,grounding,embeded")),
     r"^JudgeOptions.judge: .*unknown judge 'embeded' \(did you mean embedded\?\)"),
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(judge="arith+grouding")),
     r"^JudgeOptions.judge: .*unknown judge 'grouding' \(did you mean grounding\?\)"),
    (lambda d: rv.MatchaRunConfig(data=d, judging=JudgeOptions(semantic_judge="nnoe")),
     r"^JudgeOptions.semantic_judge: .*\(did you mean none\?\)"),
    (lambda d: rv.AuditConfig("/no/such.jsonl", judging=JudgeOptions(judge="grounding+arithh")),
     r"^JudgeOptions.judge: .*\(did you mean arith\?\)"),
])
def test_a_misspelt_name_is_refused_when_built_with_the_closest(data: rv.DataSpec, build: object,
                                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(data)  # type: ignore[operator]


def test_checks_that_read_the_data_come_before_the_model_loads(data: rv.DataSpec, tmp_path: Path) -> None:
    """What only the data can tell (the texts' language, the labels) is checked by the pipeline before it loads a
    model given by spec: the refusal is the value's, not "no such model directory"."""
    out = tmp_path / "run"
    with pytest.raises(UserError, match=r"^perturbation method 'C-pinyin' perturbs zh text, and these texts are en"):
        rv.robustness(rv.RobustnessConfig(data=data, sets="C-swap,C-pinyin"), NO_MODEL, out)
    with pytest.raises(UserError, match=r"^template 'nli-zh' has no label for dataset labels: no, yes$"):
        rv.robustness(rv.RobustnessConfig(data=data, sets="C-swap", prompt=PromptOptions(template="nli-zh")),
                      NO_MODEL, out)
    with pytest.raises(UserError, match=r"^perturbation method 'C-radical' perturbs zh text"):
        rv.attack_wordimportance(rv.WordImportanceRunConfig(data=data, method="C-radical"), NO_MODEL, out)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "How many?", "answer": "3"}\n{"question": \n', encoding="utf-8")
    with pytest.raises(UserError, match=rf"^{broken}:2"):
        rv.evaluate(rv.EvalConfig(data=rv.DataSpec("jsonl", str(broken))), NO_MODEL, out)
    yesno = rv.DataSpec("jsonl", data.data_file, answer_type="yesno")
    with pytest.raises(ConfigError, match=r"^MatchaRunConfig.judge: arith cannot judge yes/no reasoning"):
        rv.attack_matcha(rv.MatchaRunConfig(data=yesno), NO_MODEL, out)
    assert not out.exists()
    # With every value good, the model is what fails: the checks above were what refused.
    with pytest.raises(UserError, match="no such model directory"):
        rv.robustness(rv.RobustnessConfig(data=data, sets="C-swap"), NO_MODEL, out)


def test_the_command_line_refuses_the_same_before_loading(tmp_path: Path) -> None:
    questions = str(_yesno(tmp_path / "q.jsonl"))
    done = cli_inproc("robustness", "--model", NO_MODEL, "--dataset", "jsonl", "--data-file", questions, "--answer-type",
               "label", "--sets", "C-keyboard,C-swpa", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("robusteval: error: --sets: unknown perturbation method 'C-swpa' (did you mean C-swap?)")
    assert not (tmp_path / "run").exists()
