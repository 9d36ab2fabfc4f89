"""`variants check`: validate's original-answer check plus the deep checks, one line per finding with
file:line and template id, a summary count, exit 1 on errors and 2 on unreadable input."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from variants_testlib import run_cli

from robusteval.variants import CheckConfig, check

GOOD = """\
version: 1
templates:
  - id: good
    question: Tom has {{a}} apples and eats {{b}}. How many are left?
    variables:
      a: {range: [5, 15]}
      b: {range: [1, 5]}
    constraints:
      - b < a
    answer: a - b
    original: {a: 6, b: 2}
    original_answer: 4
    exclude_original: true
"""

WRONG_ANSWER = """\
  - id: wrong-answer
    question: Ann has {{a}} pears and gives away {{b}}. How many are left?
    variables:
      a: {range: [5, 15]}
      b: {range: [1, 5]}
    answer: a + b
    original: {a: 6, b: 2}
    original_answer: 4
"""

UNSATISFIABLE = """\
  - id: unsat
    question: Pick {{a}} and {{b}}.
    variables:
      a: {range: [1, 10]}
      b: {range: [1, 10]}
    constraints:
      - a > b
      - b > a + 3
    answer: a + b
    original: {a: 2, b: 1}
    original_answer: 3
"""

DIVISION_BY_ZERO = """\
  - id: div0
    question: Share {{a}} sweets among {{b}} children and {{c}} teachers.
    variables:
      a: {range: [10, 20]}
      b: {range: [0, 4]}
      c: {range: [0, 3]}
    answer: a // (b + c)
    original: {a: 12, b: 2, c: 1}
    original_answer: 4
"""

NOT_INTEGER = """\
  - id: not-integer
    question: Share {{a}} sweets among {{b}} children. How many does each get?
    variables:
      a: {range: [10, 30]}
      b: {range: [2, 6]}
    answer: a / b
    original: {a: 12, b: 3}
    original_answer: 4
"""

HIDDEN = """\
  - id: hidden
    question: A box holds {{a}} rows of pens. How many pens?
    variables:
      a: {range: [2, 9]}
      k: {set: [3, 4]}
    answer: a * k
    original: {a: 2, k: 3}
    original_answer: 6
"""


def _write(tmp_path: Path, *blocks: str, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(GOOD + "".join(blocks), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str, after: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if lines[i].strip().startswith(needle)) + 1


def test_a_good_template_and_the_examples_pass(tmp_path: Path) -> None:
    example = resources.files("robusteval.variants") / "example_templates.yaml"
    report = check(CheckConfig([str(_write(tmp_path)), str(example)]))
    assert report.findings == [] and not report.failed
    assert report.counts == {"templates": 4, "ok": 4, "with_warnings": 0, "with_errors": 0, "errors": 0,
                             "warnings": 0}
    good = report.stats[0]
    # 10 x 4 = 40 combinations, all enumerated; b < a holds on every one (b <= 4 < 5 <= a).
    assert (good.combinations, good.exhaustive, good.satisfied["k"], good.satisfied["n"]) == (40, True, 40, 40)
    assert good.satisfied["ci95"] is not None and good.instances == 5


def test_wrong_answer_unsatisfiable_domain_and_division_by_zero_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, WRONG_ANSWER, UNSATISFIABLE, DIVISION_BY_ZERO)
    assert run_cli(["variants", "check", str(path), "--draws", "500"], monkeypatch) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == ("4 templates checked: 1 ok, 0 with warnings only, 3 with errors (4 errors, "
                         "0 warnings)")
    findings = lines[:-1]
    assert findings == [
        f"{path}:{_line_of(path, 'answer:', 'wrong-answer')}: error: template 'wrong-answer', field 'answer': "
        "original values give 8, the original answer is 4",
        f"{path}:{_line_of(path, 'answer:', 'unsat')}: error: template 'unsat', field 'answer': "
        "the original values break the template's constraints",
        f"{path}:{_line_of(path, 'constraints:', 'unsat')}: error: template 'unsat', field 'constraints': "
        "unsatisfiable: none of all 81 combinations satisfy the constraints",
        f"{path}:{_line_of(path, 'answer:', 'div0')}: error: template 'div0', field 'answer': "
        "division by zero (at a=10, b=0, c=0) - on 10 of all 120 combinations",
    ]


def test_non_integer_and_unshown_answers_are_errors_warnings_do_not_fail(tmp_path: Path) -> None:
    path = _write(tmp_path, NOT_INTEGER, HIDDEN)
    report = check(CheckConfig([str(path)], draws=200))
    by_id = {f.template_id: f for f in report.findings if f.severity == "error"}
    assert by_id["not-integer"].severity == "error" and by_id["not-integer"].field == "answer"
    assert "the original answer is an integer but" in by_id["not-integer"].message
    assert "of 80 (" in by_id["not-integer"].message  # k of n with its interval: 20 x 4 combinations
    assert by_id["hidden"].field == "question"
    assert "a variable changes the answer without being shown" in by_id["hidden"].message

    # Fixed by the author: a constraint makes the share whole; rounding instead is only a warning.
    fixed = NOT_INTEGER.replace("    answer: a / b", "    constraints: ['a % b == 0']\n    answer: a / b")
    rounded = NOT_INTEGER.replace("not-integer", "rounded").replace("    answer: a / b",
                                                                    "    answer: a / b\n    answer_round: 0")
    report = check(CheckConfig([str(_write(tmp_path, fixed, rounded, name="fixed.yaml"))], draws=200))
    assert [(f.template_id, f.severity) for f in report.findings] == [("rounded", "warning")]
    assert "answer_round hides it" in report.findings[0].message and not report.failed


def test_instances_that_repeat_the_original_or_run_short_are_warned(tmp_path: Path) -> None:
    repeats = GOOD.replace("    exclude_original: true\n", "").replace("id: good", "id: repeats")
    small = """\
  - id: small
    question: What is {{a}} + 1?
    variables:
      a: {set: [2, 3]}
    answer: a + 1
    original: {a: 2}
    original_answer: 3
    exclude_original: true
"""
    path = tmp_path / "w.yaml"
    path.write_text(repeats + small, encoding="utf-8")
    report = check(CheckConfig([str(path)], n=40))
    messages = {(f.template_id, f.field): f.message for f in report.findings}
    assert "is the original problem: set exclude_original: true" in messages[("repeats", "exclude_original")]
    assert messages[("small", "variables")] == "only 1 distinct instance(s) exist, 40 asked: widen the domains"
    assert not report.failed


def test_a_draft_is_flagged_for_its_answer_and_json_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    drafts = tmp_path / "d.yaml"
    assert run_cli(["variants", "draft", "--question", "Ann has 7 cats.", "--answer", "7", "--id", "ann",
                    "--out", str(drafts)], monkeypatch) == 0
    capsys.readouterr()
    out_json = tmp_path / "r.json"
    assert run_cli(["variants", "check", str(drafts), "--json", str(out_json)], monkeypatch) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(f"{drafts}:{_line_of(drafts, 'answer:', 'ann')}: error: template 'ann', field 'answer': "
                           "still the draft placeholder TODO")
    saved = json.loads(out_json.read_text(encoding="utf-8"))
    assert saved["counts"]["errors"] == 1 and saved["findings"][0]["line"] == _line_of(drafts, "answer:", "ann")


def test_unreadable_input_exits_2_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntemplates: [\n", encoding="utf-8")
    for argv in (["variants", "check", str(tmp_path / "missing.yaml")], ["variants", "check", str(bad)],
                 ["variants", "check", str(_write(tmp_path)), "--draws", "0"]):
        assert run_cli(argv, monkeypatch) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
    assert "--draws" in err
