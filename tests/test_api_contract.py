"""The public contract a notebook meets: every entry point checks its arguments when called, before a model loads
or a directory is made, with one line naming the call and the argument (and the closest name for a misspelt
one), as the command line and study files do. A table of bad calls, each with the message it must give."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.reportstores import matcha_store
from robusteval.models.generation import GenerationOptions

QUESTIONS = '{"id": "q1", "question": "What is 2 + 3?", "answer": "5"}\n'


class Ctx:
    """What the bad calls need: a data file, a DataSpec, a finished run, a folder nothing may be made in."""

    def __init__(self, tmp_path: Path) -> None:
        self.file = tmp_path / "q.jsonl"
        self.file.write_text(QUESTIONS, encoding="utf-8")
        self.data = rv.DataSpec("jsonl", self.file, answer_type="number")  # a Path is a path
        self.out = tmp_path / "out"
        self.run = matcha_store(tmp_path / "matcha", 3)


BAD_CALLS: list[tuple[str, Callable[[Ctx], Any], str]] = [
    # configs: names, kinds, nested configs
    ("misspelt option", lambda c: rv.MatchaRunConfig(data=c.data, stpes=2),
     r"^MatchaRunConfig.stpes: unknown option \(did you mean steps\?\)$"),
    ("float for an int", lambda c: rv.MatchaRunConfig(data=c.data, steps=2.5),
     r"^MatchaRunConfig.steps: expected a whole number, got 2.5$"),
    ("str for an int", lambda c: rv.DataSpec("jsonl", c.file, limit="5"),
     r"^DataSpec.limit: expected a whole number, got '5'$"),
    ("int for a bool", lambda c: rv.EvalConfig(data=c.data, generation=GenerationOptions(chat=1)),
     r"^GenerationOptions.chat: expected true/false, got 1$"),
    ("a path for the DataSpec", lambda c: rv.MatchaRunConfig(data="math.jsonl"),
     r"^MatchaRunConfig.data: expected a DataSpec \(robusteval.DataSpec\(...\)\), got str 'math.jsonl'$"),
    ("a nested config's option", lambda c: rv.MatchaRunConfig(data=c.data, limit=3),
     r"^MatchaRunConfig.limit: unknown option; it is an option of data=DataSpec\(...\)$"),
    ("a required field left out", lambda c: rv.EvalConfig(), r"^EvalConfig.data: required: no default$"),
    ("nothing close", lambda c: rv.OrsConfig(("runs/x",), zzz=1),
     r"^OrsConfig.zzz: unknown option; options: runs, q, eta, beta_cap, out, bootstrap, bootstrap_seed, min_attacked$"),
    ("variants config", lambda c: rv.variants.InstantiateConfig("t.yaml", n="5"),
     r"^InstantiateConfig.n: expected a whole number, got '5'$"),
    ("perturbation spec", lambda c: rv.PerturbationSpec(rat=0.5), r"^PerturbationSpec.rat: unknown option \(did "
     r"you mean rate\?\)$"),
    # load_model
    ("batch size as text", lambda c: rv.load_model("hf:/no/such/model", batch_size="8"),
     r"^load_model\(\): batch_size: expected a whole number, got '8' \(hf backend\)$"),
    ("spec that is no string", lambda c: rv.load_model(42), r"^load_model\(\): spec: expected a model spec string"),
    ("misspelt model option", lambda c: rv.load_model("hf:/no/such/model", dtpye="bfloat16"),
     r"^load_model\(\): unknown model option dtpye \(did you mean dtype\?\) for the hf backend; hf options: "),
    # pipelines
    ("misspelt keyword", lambda c: rv.evaluate(rv.EvalConfig(c.data), "hf:/no/such/model", c.out, batch_sise=8),
     r"^evaluate\(\): unknown argument 'batch_sise' \(did you mean batch_size\?\); arguments: config, backend, "
     r"store, batch_size$"),
    ("config of another pipeline", lambda c: rv.evaluate(rv.MatchaRunConfig(c.data), "hf:/no/such/model", c.out),
     r"^evaluate\(\): config: expected a EvalConfig, got MatchaRunConfig"),
    ("a model that is neither", lambda c: rv.evaluate(rv.EvalConfig(c.data), 42, c.out),
     r"^evaluate\(\): backend: expected a model \(rv.load_model\(spec\)\) or its spec string, got int 42$"),
    ("a run directory that is no path", lambda c: rv.attack_matcha(rv.MatchaRunConfig(c.data), "hf:/no/such", 7),
     r"^attack_matcha\(\): store: expected a run directory \(a str or Path\) or an open RunStore, got int 7$"),
    ("checked before the model loads", lambda c: rv.attack_matcha(rv.MatchaRunConfig(c.data), "hf:/no/such", c.out,
                                                                    batch_size=2.5),
     r"^attack_matcha\(\): batch_size: expected a whole number, got 2.5$"),
    ("word importance", lambda c: rv.attack_wordimportance(rv.MatchaRunConfig(c.data), "hf:/no/such", c.out),
     r"^attack_wordimportance\(\): config: expected a WordImportanceRunConfig, got MatchaRunConfig"),
    ("variants pipeline", lambda c: rv.variants.check("drafts.yaml"),
     r"^check\(\): config: expected a CheckConfig, got str 'drafts.yaml'$"),
    ("too many by position", lambda c: rv.ors(rv.OrsConfig(("runs/x",)), 1),
     r"^ors\(\): too many positional arguments$"),
    # reading runs
    ("a run directory that is no path", lambda c: rv.results_frame(42),
     r"^results_frame\(\): expected a path \(a str or Path\) or a list of them, got int 42$"),
    ("a list holding no path", lambda c: rv.results_frame([c.run, 3]),
     r"^results_frame\(\): expected paths \(str or Path\), got int 3 among them$"),
    ("load_run of no path", lambda c: rv.load_run(None),
     r"^load_run\(\): expected a run directory \(a str or Path\), got NoneType None$"),
    ("a misspelt stage", lambda c: rv.load_run(c.run).records("matcha_outcomes"),
     r"matcha: no stage 'matcha_outcomes' in this run \(did you mean matcha_outcome\?\); its stages: "
     r"matcha_outcome$"),
    ("a stage the run lacks", lambda c: rv.load_run(c.run).units("eval"),
     r"matcha: no stage 'eval' in this run; its stages: matcha_outcome$"),
]


@pytest.mark.parametrize(("call", "message"), [(call, message) for _, call, message in BAD_CALLS],
                         ids=[name for name, _, _ in BAD_CALLS])
def test_a_bad_call_is_refused_in_one_line_before_anything_is_made(tmp_path: Path, call: Callable[[Ctx], Any],
                                                                     message: str) -> None:
    ctx = Ctx(tmp_path)
    with pytest.raises(rv.UserError, match=message) as info:
        call(ctx)
    assert "\n" not in str(info.value)
    assert not ctx.out.exists(), "a refused call made its run directory"


def test_the_errors_are_exported_and_a_config_error_is_a_value_error(tmp_path: Path) -> None:
    from robusteval import config, errors

    assert rv.UserError is errors.UserError and rv.ConfigError is config.ConfigError
    assert rv.DataError is errors.DataError and rv.BackendError is errors.BackendError
    assert {"UserError", "ConfigError", "DataError", "BackendError"} <= set(dir(rv))
    with pytest.raises(ValueError, match="did you mean steps"):
        rv.MatchaRunConfig(data=rv.DataSpec("jsonl", "x.jsonl"), stpes=2)
    assert issubclass(rv.ConfigError, rv.UserError)


def test_paths_are_str_or_path_and_one_path_is_never_iterated(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    assert ctx.data.data_file == str(ctx.file)  # a Path given, the str the identity has always held
    assert rv.DataSpec("jsonl", str(ctx.file), answer_type="number") == ctx.data
    frames = [rv.results_frame(ctx.run), rv.results_frame(str(ctx.run)), rv.results_frame([ctx.run]),
              rv.results_frame(iter([str(ctx.run)]))]
    assert all(frame.equals(frames[0]) for frame in frames) and len(frames[0]) > 0
    # A folder that is no run is named whole (its characters are not walked as paths).
    with pytest.raises(rv.UserError) as info:
        rv.results_frame(str(tmp_path / "runs" / "eval"))
    assert str(tmp_path / "runs" / "eval") in str(info.value)


def test_a_model_given_by_its_spec_is_loaded(tiny_llama_dir: Path, tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    summary = rv.evaluate(rv.EvalConfig(ctx.data, generation=GenerationOptions(max_new_tokens=4)),
                          f"hf:{tiny_llama_dir}", ctx.out, batch_size=2)
    assert summary["n"] == 1 and rv.load_run(ctx.out).records("answer_first")
