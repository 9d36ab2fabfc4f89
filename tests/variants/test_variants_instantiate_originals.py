"""`variants instantiate --originals FILE`: the original problems written from the templates, in the format
`variants eval --originals` reads (issue 28 item 3)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from variants_testlib import run_cli, var_math, var_template

from robusteval.variants.checks import original_instance
from robusteval.variants.pipeline import check_originals_file
from robusteval.variants.template import load_template_file

EXAMPLE = str(resources.files("robusteval.variants") / "example_templates.yaml")

BROKEN = """\
version: 1
templates:
  - id: apples
    question: Tom has {{a}} apples and buys {{b}} more. How many now?
    variables:
      a: {range: [2, 9]}
      b: {range: [2, 9]}
    answer: a + b
    original: {a: 3, b: 4}
    original_answer: 7
  - id: wrong-answer
    question: Sam has {{a}} pens and loses {{b}}. How many are left?
    variables:
      a: {range: [5, 9]}
      b: {range: [1, 4]}
    answer: a - b
    original: {a: 6, b: 2}
    original_answer: 5
"""


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_originals_are_the_templates_at_their_original_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    originals, instances = tmp_path / "originals.jsonl", tmp_path / "instances.jsonl"
    code = run_cli(
        [
            "variants",
            "instantiate",
            "--templates",
            EXAMPLE,
            "--out",
            str(instances),
            "--originals",
            str(originals),
        ],
        monkeypatch,
    )
    out = capsys.readouterr().out
    assert code == 0 and "wrote 3 original problems to" in out and "wrote 15 instances" in out
    templates = load_template_file(EXAMPLE).templates
    rows = _rows(originals)
    assert rows == [original_instance(t).to_json() for t in templates]  # type: ignore[union-attr]
    assert [r["id"] for r in rows] == [t.id for t in templates]
    assert [r["answer"] for r in rows] == [t.original_answer for t in templates]
    assert rows[0]["question"].startswith("Two cyclists start 90 km apart")  # type: ignore[union-attr]
    # What `variants eval --originals` reads: one instance per problem, its id the problem's.
    assert [r.id for r in check_originals_file(originals)] == [t.id for t in templates]
    assert {str(r["id"]).rsplit("_", 1)[0] for r in _rows(instances)} == {t.id for t in templates}


def test_a_template_whose_original_does_not_check_is_left_out_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    templates = tmp_path / "t.yaml"
    templates.write_text(BROKEN, encoding="utf-8")
    originals = tmp_path / "only.jsonl"
    assert (
        run_cli(
            ["variants", "instantiate", "--templates", str(templates), "--originals", str(originals)],
            monkeypatch,
        )
        == 0
    )  # only the originals: no instances file needed
    captured = capsys.readouterr()
    assert [r["id"] for r in _rows(originals)] == ["apples"]
    assert (
        "template 'wrong-answer': no original problem written (mismatch: original values give 4, the "
        "original answer is 5)" in captured.err
    )
    assert "wrote 1 original problems" in captured.out and "1 template(s) without one" in captured.out


@pytest.mark.parametrize("flags", [[], ["--out", "a.jsonl", "--out-dir", "d"]])
def test_outputs_must_be_one_of(
    flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli(["variants", "instantiate", "--templates", EXAMPLE, *flags], monkeypatch) == 2
    assert "--originals" in capsys.readouterr().err


def test_var_math_amc23_originals_match_the_published_answers(tmp_path: Path) -> None:
    from robusteval.variants.configs import InstantiateConfig
    from robusteval.variants.pipeline import instantiate

    published = {row["id"]: row for row in _rows(var_math("originals", "amc23_test.jsonl"))}
    made = instantiate(
        InstantiateConfig(str(var_template("amc23")), compat="var-math", originals=str(tmp_path / "o.jsonl"))
    )
    rows = {str(r["id"]): r for r in _rows(tmp_path / "o.jsonl")}
    # #11 records no original values, #22's are not among its aligned rows: both said, the other 38 written.
    assert len(rows) == 38 and sorted(line.split("'")[1] for line in made.no_original) == ["11", "22"]
    assert all(float(rows[i]["answer"]) == float(published[i]["answer"]) for i in rows)  # type: ignore[arg-type]
    same = sum(rows[i]["question"] == published[i]["question"] for i in rows)
    assert same == 30  # the others print a value differently (1/3 for \frac{1}{3}) or space it differently
