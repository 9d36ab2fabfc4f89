"""Bad templates are reported with id and reason and skipped; the rest are processed; exit code says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from variants_testlib import run_cli

GOOD = {
    "id": "good",
    "question": "What is {{a}} + 1?",
    "variables": {"a": {"range": [1, 10]}},
    "answer": "a + 1",
    "original": {"a": 2},
    "original_answer": 3,
}
BAD = [
    (
        {"id": "undef", "question": "{{a}}", "variables": {"a": {"range": [1, 5]}}, "answer": "a + zz"},
        "field 'answer'",
        "undefined variable 'zz'",
    ),
    (
        {
            "id": "undef-placeholder",
            "question": "{{a}} and {{b}}",
            "variables": {"a": {"range": [1, 5]}},
            "answer": "a",
        },
        "field 'question'",
        "undefined variable",
    ),
    (
        {"id": "empty", "question": "{{a}}", "variables": {"a": {"range": [5, 5]}}, "answer": "a"},
        "field 'variables.a.range'",
        "empty domain",
    ),
    (
        {"id": "empty-set", "question": "{{a}}", "variables": {"a": {"set": []}}, "answer": "a"},
        "field 'variables.a.set'",
        "empty domain",
    ),
    (
        {
            "id": "unsat",
            "question": "{{a}}",
            "variables": {"a": {"range": [1, 5]}},
            "constraints": ["a > 10"],
            "answer": "a",
        },
        "field 'constraints'",
        "unsatisfiable",
    ),
    (
        {
            "id": "inf",
            "question": "{{a}}",
            "variables": {"a": {"range": [1, 5]}},
            "answer": "exp(a * 1000.0) - exp(a * 1000.0)",
        },
        "field 'answer'",
        "overflow",
    ),
    (
        {
            "id": "nan",
            "question": "{{a}}",
            "variables": {"a": {"range": [1, 5]}},
            "answer": "a * 1e308 * 10 - a * 1e308 * 10",
        },
        "field 'answer'",
        "non-finite answer",
    ),
    (
        {
            "id": "complex",
            "question": "{{a}}",
            "variables": {"a": {"range": [1, 5]}},
            "answer": "(-a) ** 0.5",
        },
        "field 'answer'",
        "non-real answer",
    ),
    ({"id": "typo", "question": "{{a}}", "variabels": {}, "answer": "1"}, "field 'variabels'", "unknown key"),
    (
        {
            "id": "ragged",
            "question": "{{a}}{{b}}",
            "variables": {"a": {"values": [1, 2]}, "b": {"values": [1]}},
            "answer": "a",
        },
        "field 'variables'",
        "differ in length",
    ),
]


def _write(tmp_path: Path, templates: list[dict]) -> Path:
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "templates": templates}, sort_keys=False))
    return path


def test_instantiate_reports_each_bad_template_and_keeps_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, [GOOD, *(b[0] for b in BAD), {**GOOD, "id": "good2"}])
    out = tmp_path / "inst.jsonl"
    code = run_cli(
        ["variants", "instantiate", "--templates", str(path), "--n", "3", "--out", str(out)], monkeypatch
    )
    err = capsys.readouterr().err
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("skipped:")]
    assert len(lines) == len(BAD)
    for template, field, reason in BAD:
        line = next(x for x in lines if f"template '{template['id']}'" in x)
        assert field in line and reason in line, line
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == ["good_0", "good_1", "good_2", "good2_0", "good2_1", "good2_2"]


def test_validate_reports_mismatches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = {**GOOD, "id": "wrong", "original_answer": 4}
    no_original = {k: v for k, v in GOOD.items() if k != "original"} | {"id": "noorig"}
    broken = {**GOOD, "id": "broken", "answer": "1 / (a - 2)"}
    report = tmp_path / "report.json"
    path = _write(tmp_path, [GOOD, wrong, no_original, broken, BAD[0][0]])
    code = run_cli(["variants", "validate", "--templates", str(path), "--json", str(report)], monkeypatch)
    captured = capsys.readouterr()
    assert code == 1
    assert "mismatch:" in captured.err and "template 'wrong'" in captured.err and "give 3" in captured.err
    assert "unchecked:" in captured.err and "template 'noorig'" in captured.err
    assert "template 'broken'" in captured.err and "division by zero" in captured.err
    assert "template 'undef'" in captured.err
    statuses = {t["id"]: t["status"] for t in json.loads(report.read_text())["templates"]}
    assert statuses == {
        "good": "ok",
        "wrong": "mismatch",
        "noorig": "unchecked",
        "broken": "error",
        "undef": "error",
    }

    ok_path = tmp_path / "ok.yaml"
    ok_path.write_text(yaml.safe_dump([GOOD]))
    assert run_cli(["variants", "validate", "--templates", str(ok_path)], monkeypatch) == 0


def test_unusable_files_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("templates: [\n  {id: x\n")
    assert run_cli(["variants", "validate", "--templates", str(broken)], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.yaml" in err[0] and "invalid YAML" in err[0]
    assert run_cli(["variants", "validate", "--templates", str(tmp_path / "missing.yaml")], monkeypatch) == 2
    assert "no such file" in capsys.readouterr().err
