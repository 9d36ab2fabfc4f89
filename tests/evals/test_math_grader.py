"""``robusteval eval --math-grader``: the grader decides every stored verdict, is part of the run identity, and
each record names it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.runs import units
from helpers.shared import needs_modules
from robusteval.cli.main import build_parser
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.answer_first import grade_completion
from robusteval.models import GENERATE, Generation
from robusteval.models.generation import GenerationOptions

needs_math_verify = needs_modules("math_verify", "latex2sympy2_extended", "antlr4")


def _questions(path: Path) -> rv.DataSpec:
    rows = [{"question": f"Tom has {i} apples and gets {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rv.DataSpec("jsonl", str(path))


@needs_math_verify
def test_grade_completion_is_decided_by_the_chosen_grader() -> None:
    example = Example(id="q1", question="How many?", answer="5", answer_type="number")
    completion = "The answer is five. Because 2 + 3 = 5."
    builtin = grade_completion(example, completion)
    assert (builtin["predicted"], builtin["correct"], builtin["grader"]) == ("five", True, "builtin")
    by_math_verify = grade_completion(example, completion, math_grader="math-verify")
    assert (by_math_verify["correct"], by_math_verify["grader"]) == (False, "math-verify")
    right = grade_completion(example, "The answer is $5$. Because 2 + 3 = 5.", math_grader="math-verify")
    assert (right["predicted"], right["correct"], right["grader"]) == ("5", True, "math-verify")


class Scripted:
    """A backend that answers every question with a fixed completion (the question found in the prompt: the
    last one there, as exemplars come first)."""

    name = "scripted"
    capabilities = frozenset({GENERATE})

    def __init__(self, completions: dict[str, str]):
        self.completions = completions

    def generate(self, requests: Any) -> list[Generation]:
        out = []
        for request in requests:
            asked = [q for q in self.completions if q in request.prompt]
            out.append(Generation(self.completions[max(asked, key=request.prompt.rfind)], "stop"))
        return out


@needs_math_verify
def test_eval_records_its_grader_in_the_identity_and_every_record(tmp_path: Path) -> None:
    data = _questions(tmp_path / "q.jsonl")
    questions = [json.loads(line)["question"] for line in Path(data.data_file).read_text(encoding="utf-8").splitlines()]
    # Golds 2, 4 and 6. math-verify reads a spelled-out "two" as letters (bench/RESULTS.md: grading crosscheck),
    # the builtin grader as 2.
    backend = Scripted(dict(zip(questions, ["The answer is two. 0 + 2 = 2.", "The answer is $4$. 1 + 3 = 4.",
                                            "The answer is 7. 2 + 4 = 7."], strict=True)))
    config = rv.EvalConfig(data=data, generation=GenerationOptions(max_new_tokens=6),
                           math_grader="math-verify")
    out = tmp_path / "eval-math-verify"
    summary = rv.evaluate(config, backend, out)
    run = rv.load_run(out)
    assert run.identity["math_grader"] == "math-verify" and summary["math_grader"] == "math-verify"
    records = run.records("answer_first")
    assert len(records) == 3 and {r["grader"] for r in records} == {"math-verify"}
    # Every stored verdict is math-verify's, known beforehand.
    assert {r["gold"]: (r["predicted"], r["correct"]) for r in records} == {
        "2": ("two", False), "4": ("4", True), "6": ("7", False)}
    # Resumed with the same grader: nothing is asked again. The other grader is another run, refused here.
    before = units(out)
    rv.evaluate(config, backend, out)
    assert units(out) == before
    with pytest.raises(UserError, match="math_grader: stored 'math-verify', now 'builtin'"):
        rv.evaluate(dataclasses.replace(config, math_grader="builtin"), backend, out)
    builtin = rv.evaluate(dataclasses.replace(config, math_grader="builtin"), backend, tmp_path / "eval-builtin")
    assert builtin["n_correct"] == 2 and summary["n_correct"] == 1


def test_eval_flag_and_default() -> None:
    args = build_parser().parse_args(["eval", "--model", "hf:x", "--dataset", "gsm8k", "--out", "o",
                                      "--math-grader", "math-verify"])
    assert args.math_grader == "math-verify"
    assert rv.EvalConfig(data=rv.DataSpec("gsm8k")).math_grader == "builtin"
    with pytest.raises(UserError, match="unknown grader"):
        rv.EvalConfig(data=rv.DataSpec("gsm8k"), math_grader="sympy")
