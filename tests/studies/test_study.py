"""Studies: models x methods x datasets from one TOML file, one run directory per cell, one leaderboard.

Real tiny models, the bundled samples, a real subprocess killed with SIGKILL mid-study, a real model folder
that cannot load.
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest

import robusteval as rv
from helpers.datafiles import gsm8k_records, write_jsonl, write_ocnli
from helpers.runs import cli_inproc, run_and_kill, units
from helpers.shared import needs_modules
from helpers.studies import MATH, YESNO, write_study
from robusteval.cli.main import main
from robusteval.errors import UserError
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.store import SUMMARY_NAME

THREE_METHODS = f"""
[datasets.math]
dataset = "jsonl"
data_file = "{MATH}"
limit = 4

[datasets.yn]
dataset = "jsonl"
data_file = "{YESNO}"
answer_type = "label"
limit = 6

[methods.eval]
datasets = ["math"]
max_new_tokens = 24

[methods.matcha]
datasets = ["math"]
steps = 1
target_answer = "clean"
max_new_tokens = 24

[methods.robustness]
datasets = ["yn"]
sets = ["C-keyboard", "C-swap"]
"""


def cells(out: Path) -> dict[str, dict]:
    return {c["cell"]: c for c in json.loads((out / "study.json").read_text())["cells"]}


def test_two_models_three_methods_leaderboard_equals_the_run_summaries(
        tiny_trained_dir: Path, tiny_llama_dir: Path, tmp_path: Path) -> None:
    study_file = write_study(tmp_path / "study.toml", [tiny_trained_dir, tiny_llama_dir], THREE_METHODS,
                             head='title = "two tiny models"\nbatch_size = 4\n')
    result = rv.study(study_file)
    out = tmp_path / "study"  # the default: a folder named after the file
    assert result.out == out and not result.failed
    names = [m.name for m in rv.load_study(study_file).models]
    assert [c.cell for c in result.cells] == [f"{m}/{method}/{d}" for m in names for method, d in
                                              (("eval", "math"), ("matcha", "math"), ("robustness", "yn"))]
    assert all(c["status"] == "done" for c in cells(out).values())
    # Every cell is an ordinary run directory whose summary the leaderboard repeats, with n and interval.
    board = json.loads((out / "leaderboard.json").read_text())
    by_cell = {(c["model"], c["column"]): c for c in board["cells"]}
    expected = {"eval:math:acc": ("eval/math", "acc", "n", "acc_ci95"),
                "matcha:math:sr": ("matcha/math", "sr", "n_attacked", None),
                "matcha:math:ur": ("matcha/math", "ur", "n_attacked", None),
                "matcha:math:wr": ("matcha/math", "wr", "n_attacked", None),
                "robustness:yn:rb_index": ("robustness/yn", "rb_index", "n", "rb_index_ci95"),
                "robustness:yn:acc@original": ("robustness/yn", "acc_original", "n", "acc_original_ci95")}
    # MATCHA's unjudged (and clean-wrong) shares get a column where some model has one (issue 34).
    shares = [(f"matcha:math:{m}", ("matcha/math", m, "n_attacked", None)) for m in ("unjudged_rate",
                                                                                    "clean_cot_wrong_rate")
              if any(c["name"] == f"matcha:math:{m}" for c in board["columns"])]
    items = list(expected.items())
    expected = dict([*items[:4], *shares, *items[4:]])
    assert [c["name"] for c in board["columns"]] == list(expected)
    attacked = 0
    for model in names:
        for column, (cell, metric, n_field, ci_field) in expected.items():
            summary = json.loads((out / model / cell / SUMMARY_NAME).read_text())
            shown = by_cell[(model, column)]
            assert shown["value"] == summary[metric] and shown["n"] == summary[n_field], (model, column)
            ci = summary[ci_field] if ci_field else (summary["ci95"] or {}).get(metric)
            assert shown["ci95"] == ci and shown["run"] == str(out / model / cell)
        attacked += json.loads((out / model / "matcha/math" / SUMMARY_NAME).read_text())["n_attacked"]
    assert attacked > 0, "no example was attacked: the MATCHA columns prove nothing"
    # Each column's cells are comparable (one comparability key), and the CSV holds the same numbers.
    assert all(c["comparability"] for c in board["columns"])
    rows = (out / "leaderboard.csv").read_text().splitlines()
    assert rows[0].split(",")[:5] == ["model", "eval:math:acc", "eval:math:acc_n", "eval:math:acc_ci_low",
                                      "eval:math:acc_ci_high"]
    assert [r.split(",")[0] for r in rows[1:]] == names
    html = (out / "report.html").read_text()
    assert "two tiny models" in html and "Perturbed" in html
    # A second run computes nothing: every cell is skipped, no unit or summary is written again.
    before = {c: (units(out / c), (out / c / SUMMARY_NAME).stat().st_mtime_ns) for c in cells(out)}
    again = rv.study(study_file)
    assert {c.status for c in again.cells} == {"skipped"}
    assert {c: (units(out / c), (out / c / SUMMARY_NAME).stat().st_mtime_ns) for c in cells(out)} == before
    # A study file changed in a way that changes a cell's results is refused before any model loads.
    study_file.write_text(study_file.read_text().replace("steps = 1", "steps = 2"))
    with pytest.raises(UserError, match=r"cell .*/matcha/math: the study file changed what this cell computes: "
                                        r".* holds a different run \(config.steps: stored 1, now 2"):
        rv.study(study_file)


LONG_EVAL = """
[datasets.var]
instances = "{instances}"
limit = 2

[datasets.yn]
dataset = "jsonl"
data_file = "{yesno}"
answer_type = "label"
limit = 4

[datasets.math]
dataset = "jsonl"
data_file = "{questions}"

[methods.variants]
datasets = ["var"]
max_new_tokens = 8

[methods.robustness]
datasets = ["yn"]
sets = "C-keyboard"

[methods.eval]
datasets = ["math"]
max_new_tokens = 8
"""


def _questions(path: Path, n: int) -> Path:
    rows = [{"question": f"Tom has {i} apples and buys {i + 1} more. How many apples now?", "answer": str(2 * i + 1)}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _instances(path: Path) -> Path:
    templates = resources.files("robusteval.variants") / "example_templates.yaml"
    assert main(["variants", "instantiate", "--templates", str(templates), "--n", "1", "--out", str(path)]) == 0
    return path


@pytest.mark.slow
def test_killed_study_resumes_every_cell_without_recomputing(tiny_llama_dir: Path, tmp_path: Path) -> None:
    body = LONG_EVAL.format(instances=_instances(tmp_path / "inst.jsonl"), yesno=YESNO,
                            questions=_questions(tmp_path / "q.jsonl", 24))
    study_file = write_study(tmp_path / "study.toml", [tiny_llama_dir], body, head="batch_size = 1\n")
    out = tmp_path / "study"
    model = rv.load_study(study_file).models[0].name
    killed = out / model / "eval" / "math"
    stored = run_and_kill(["study", str(study_file)], killed, stage="answer_first", at_least=3, logs=tmp_path)
    finished = {c: (units(out / model / c), (out / model / c / SUMMARY_NAME).stat().st_mtime_ns)
                for c in ("variants/var", "robustness/yn")}
    resumed = cli_inproc("study", str(study_file))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"study [1/3] {model}/variants/var: finished earlier, not recomputed" in resumed.stderr
    assert f"study [3/3] {model}/eval/math: running" in resumed.stderr
    # The finished cells are untouched; the killed cell kept every unit it had stored and computed the rest.
    assert {c: (units(out / model / c), (out / model / c / SUMMARY_NAME).stat().st_mtime_ns)
            for c in finished} == finished
    after = units(killed, "answer_first")
    assert len(after) == 24 and after[: len(stored)] == [u for u in stored if u[0] == "answer_first"]
    assert all(c["status"] == "done" for c in cells(out).values())
    log = (out / "study.log").read_text()
    assert log.count("study [3/3]") >= 3 and "3/3 cells finished" in log  # both runs' progress


def test_a_failing_cell_is_reported_and_the_others_complete(
        tiny_llama_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny_llama_dir, broken)
    (broken / "config.json").write_text('{"model_type": ')  # the weights are there; the model cannot load
    body = f"""
[datasets.math]
dataset = "jsonl"
data_file = "{MATH}"
limit = 2

[methods.eval]
max_new_tokens = 4

[methods.judged]
kind = "matcha"
judge = "arith+hf:{tmp_path / 'no-such-judge'}"
target_answer = "clean"
steps = 1
max_new_tokens = 8
"""
    study_file = write_study(tmp_path / "study.toml", [tiny_llama_dir, broken], body)
    assert main(["study", str(study_file), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    failed = [line for line in captured.out.splitlines() if line.startswith("failed: ")]
    good = rv.load_study(study_file).models[0].name
    assert [line.split(":")[1].strip() for line in failed] == [
        f"{good}/judged/math", "broken/eval/math", "broken/judged/math"]
    assert "no-such-judge" in failed[0] and "cannot load the model" in failed[1]
    assert all("traceback in " in line for line in failed)
    assert "eval · math · acc (higher is better)" in captured.out  # the leaderboard, printed
    state = cells(tmp_path / "out")
    assert state[f"{good}/eval/math"]["status"] == "done"
    assert (tmp_path / "out" / good / "eval" / "math" / SUMMARY_NAME).is_file()
    assert "2 failed" not in captured.err and "3 failed: " in captured.err
    # Fixed (the model repaired, the judge put in place), the same command runs the failed cells only.
    shutil.copy(tiny_llama_dir / "config.json", broken / "config.json")
    shutil.copytree(tiny_llama_dir, tmp_path / "no-such-judge")
    assert main(["study", str(study_file), "--out", str(tmp_path / "out")]) == 0
    assert f"study [1/4] {good}/eval/math: finished earlier, not recomputed" in capsys.readouterr().err


BAD_STUDIES = [
    ("[[models]]\nspec = 'hf:x'\n[datasets.a\n", r"^study.toml: invalid TOML: .*line 3"),
    ("colour = 1\n", r"^study.toml:1: colour: unknown key; known: title, out"),
    ("batch_size = 0\n", r"^study.toml:1: batch_size: must be a whole number >= 1, got 0"),
    ("title = 't'\n[ors]\nq = 0\n", r"^study.toml:3: ors.q: must be a number > 0, got 0"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\n[methods.matcha]\nsteps = 2\nstepz = 3\n",
     r"^study.toml:12: methods.matcha.stepz: unknown option of method matcha \(did you mean steps\?\)"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\n[methods.matcha]\nsteps = 'three'\n",
     r"^study.toml:11: methods.matcha.steps: expected a whole number, got 'three'"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\nlimit = 0\n[methods.eval]\n",
     r"^study.toml:10: datasets.m.limit: must be a number > 0, got 0"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\n[methods.eval]\nmax_new_tokens = 0\n",
     r"^study.toml:11: methods.eval.max_new_tokens: must be a number >= 1, got 0"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\n[methods.evaluate]\n",
     r"^study.toml:10: methods.evaluate: no method 'evaluate' \(did you mean eval\?\)"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = '{math}'\n[methods.eval]\ndatasets = ['n']\n",
     r"^study.toml:11: methods.eval.datasets: no dataset 'n'; declared: m"),
    ("{models}[datasets.m]\ndataset = 'jsonl'\ndata_file = 'missing.jsonl'\n[methods.eval]\n",
     r"^study.toml:7: datasets.m: dataset m for method eval: .*missing.jsonl"),
    ("[[models]]\nspec = 'hf:x'\ndtpye = 'float32'\n[datasets.m]\ndataset = 'jsonl'\n[methods.eval]\n",
     r"^study.toml:3: models\[0\]: unknown model option dtpye \(did you mean dtype\?\)"),
]


@pytest.mark.parametrize(("text", "message"), BAD_STUDIES)
def test_a_bad_study_file_is_one_line_naming_file_line_and_field(
        text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    models = "[[models]]\nspec = 'hf:./m'\ndevice = 'cpu'\n\n[[models]]\nspec = 'hf:./n'\n"
    Path("study.toml").write_text(text.replace("{models}", models).replace("{math}", MATH))
    assert main(["study", "study.toml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("robusteval: error: ")
    assert re.match(message, err[0].removeprefix("robusteval: error: ")), err[0]
    assert not Path("study").exists()  # refused before anything was written


@needs_modules("pypinyin")  # C-homophone
def test_word_importance_cells_give_ors_over_the_models(tiny_nli_dir: Path, tmp_path: Path) -> None:
    """Robustness and a hard-label attack on the tiny NLI classifier and on a copy of it (another model folder:
    another model to the study), with ORS over both; template and data paths relative to the study file."""
    shutil.copytree(tiny_nli_dir, tmp_path / "nli-copy")
    write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(8, seed=5))
    shutil.copy(tiny_nli_dir / "template.json", tmp_path / "template.json")
    body = """
[datasets.ocnli]
dataset = "ocnli"
data_file = "dev.json"
template = "template.json"

[methods.robustness]
sets = ["C-homophone"]

[methods.wi]
kind = "wordimportance"
method = "C-homophone"
rates = [0.01, 0.3]
budget = 20
seed = 3
"""
    study_file = write_study(tmp_path / "study.toml", [tiny_nli_dir, "./nli-copy"], body)
    result = rv.study(study_file)
    assert not result.failed
    out, board = result.out, json.loads((result.out / "leaderboard.json").read_text())
    ors_file = json.loads((out / "ors" / "wi-ocnli" / "ors.json").read_text())
    shown = {(c["model"], c["column"]): c for c in board["cells"]}
    for model in [m.name for m in rv.load_study(study_file).models]:
        summary = json.loads((out / model / "wi" / "ocnli" / SUMMARY_NAME).read_text())
        assert summary["n_attacked"] > 0 and rv.load_run(out / model / "wi" / "ocnli").identity["template"] == "tiny-nli"
        asr = shown[(model, "wi:ocnli:asr@max")]
        # α = 0.01 lets no word of these short texts change: the two rates differ, so the cell shows the largest's.
        assert summary["asr_by_rate"]["0.01"] == 0 < summary["asr_by_rate"]["0.3"]
        assert (asr["value"], asr["n"]) == (summary["asr_by_rate"]["0.3"], summary["n_attacked"])
        assert shown[(model, "wi:ocnli:ors")]["value"] == ors_file["ors"][summary["model"]]
        robustness = json.loads((out / model / "robustness" / "ocnli" / SUMMARY_NAME).read_text())
        assert shown[(model, "robustness:ocnli:rb_index")]["value"] == robustness["rb_index"]
    assert len(ors_file["ors"]) == 2 and "ORS" in (out / "report.html").read_text()


@pytest.mark.parametrize("doc", ["README.md", "docs/study.md"])
def test_the_documented_study_files_are_valid(doc: str, tmp_path: Path) -> None:
    """The study files shown in the README and docs/study.md read and check as written (their data files put
    in place; the models are only named, not loaded)."""
    text = (Path(__file__).resolve().parents[2] / doc).read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    (tmp_path / "gsm8k").mkdir()
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", gsm8k_records(3))
    shutil.copy(MATH, tmp_path / "math.jsonl")
    shutil.copy(YESNO, tmp_path / "yesno.jsonl")
    _instances(tmp_path / "var_math.jsonl")
    (tmp_path / "study.toml").write_text(block, encoding="utf-8")
    plan = rv.load_study(tmp_path / "study.toml")
    assert len(plan.cells) == len(plan.models) * len({(c.method_name, c.dataset) for c in plan.cells}) >= 4
