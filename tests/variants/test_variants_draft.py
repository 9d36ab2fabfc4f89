"""`variants draft`: the numbers of a problem become variables; the draft loads once its answer is written,
renders the original at the original values, and (with answers and the constraints they need) passes check."""

from __future__ import annotations

import io
import json
import re
from fractions import Fraction
from importlib import resources
from pathlib import Path

import pytest
import yaml
from variants_testlib import run_cli, var_math

from helpers.shared import shared_file
from robusteval.errors import UserError
from robusteval.variants import CheckConfig, DraftConfig, check, draft, draft_template, find_numbers
from robusteval.variants.checks import original_assignment
from robusteval.variants.sampler import compute_native, render_question, shown_values
from robusteval.variants.template import parse_template, templates_from_data

SAMPLES = resources.files("robusteval.data.samples") / "math.jsonl"

# Answers (and the constraints they need) an author writes into the drafts of the bundled sample problems.
SAMPLE_ANSWERS: dict[str, tuple[str, list[str]]] = {
    "math-01": ("a + b", []), "math-02": ("a - b", []), "math-03": ("a + b", []), "math-04": ("a - b", []),
    "math-05": ("a + b", []), "math-06": ("a - b", []), "math-07": ("a + b", []), "math-08": ("a + b", []),
    "math-09": ("a * b", []), "math-10": ("a / b", ["a % b == 0"]), "math-11": ("a * b", []),
    "math-12": ("a * b", []), "math-13": ("c - a - b", ["a + b < c"]), "math-14": ("100 * a", []),
    "math-15": ("2 * a * b", []), "math-16": ("a / 4", ["a % 4 == 0"]),
    "math-17": ("a * (100 - b) / 100", ["a * (100 - b) % 100 == 0"]),
    "math-18": ("a * b / 100", ["a * b % 100 == 0"]), "math-19": ("a / 60", []),
    "math-20": ("a / 5", ["a % 5 == 0"]), "math-21": ("a / b", ["a % b == 0"]), "math-22": ("a / 2", []),
    "math-23": ("a * (b + c)", []), "math-24": ("(a + b) / c", ["(a + b) % c == 0"]),
    "math-25": ("a - b - c", ["b + c < a"]), "math-26": ("b / a", ["b % a == 0"]), "math-27": ("a * b", []),
    "math-28": ("a * b", []), "math-29": ("a / b * c", ["a % b == 0"]), "math-30": ("3 * a / 4", ["a % 4 == 0"]),
}


def fill(text: str, answers: dict[str, tuple[str, list[str]]]) -> str:
    """Edit a draft as an author would: the TODO line becomes the answer, constraints are appended."""
    out: list[str] = []
    current = None
    for line in text.splitlines():
        if m := re.match(r"  - id: (\S+)", line):
            current = m.group(1).strip('"')
        if current in answers and line.startswith("    answer: TODO"):
            answer, extra = answers[current]
            if extra and not any(x == "    constraints:" for x in out[out.index(f"  - id: {current}"):]):
                out.append("    constraints:")
            out += [f"      - {c}" for c in extra]
            line = f"    answer: {answer}"
        out.append(line)
    # constraints appended just before `answer` follow the drafted ones, inside the same list
    return "\n".join(out) + "\n"


def _render_original(data: dict) -> str:
    template = parse_template({**data, "answer": "0"})
    base, row, status, why = original_assignment(template)
    assert status == "ok", why
    values, _, ok = compute_native(template, base, row)
    assert ok, f"{template.id}: the original values break the drafted constraints"
    return render_question(template, shown_values(template, values))


TRICKY = [
    ("A 1,250 m road costs $3.50 per metre; 15% is paid now.", ["1,250", "3.50", "15"], []),
    ("Mix 3/4 cup with $\\frac{1}{6}$ cup; x^2 + 3x = -10 at 3:45 on 12/25/2024.", ["3", "4", "1", "6", "3", "-10"],
     ["2", "3", "45", "12", "25", "2024"]),
    ("The 3rd H2O sample of COVID-19 in 3D costs 007 or 0 units, 10^{8} or $x_{12}$, \\sqrt[3]{27}.",
     ["27"], ["3", "2", "19", "3", "007", "0", "10", "8", "12", "3"]),
    ("It was -5 degrees, then (-2.5); 10-4 = 6 and 5km of 2.0 kg.", ["-5", "-2.5", "10", "4", "6", "5", "2.0"], []),
]


@pytest.mark.parametrize(("text", "varied", "kept"), TRICKY)
def test_numbers_in_words_units_latex_are_told_apart(text: str, varied: list[str], kept: list[str]) -> None:
    found = find_numbers(text)
    assert [n.written for n in found.numbers] == varied
    assert [f.written for f in found.fixed] == kept


def test_each_kind_of_number_keeps_its_properties() -> None:
    d = draft_template("A 1,250 m road costs $3.50 per metre; 15% is paid now, 0.4 of it by Ann, "
                       "and $\\frac{3}{4}$ of it on day -2.", "5", id="road")
    v = {x.number.written: x for x in d.variables}
    road, price, pct, share = v["1,250"], v["3.50"], v["15"], v["0.4"]
    num, den, day = v["3"], v["4"], v["-2"]
    assert road.format == "," and road.step == 10 and road.lo > 0  # roundness: 1,250 varies by tens
    assert price.format == ".2f" and price.step == Fraction("0.1") and price.lo > 0
    assert pct.hi <= 100 and (f"0 <= {pct.name} <= 100", "a percentage") in d.constraints
    assert share.hi < 1 and (f"0 < {share.name} < 1", "a proportion below 1, as in the original") in d.constraints
    assert den.lo >= 2 and f"gcd({num.name}, {den.name}) == 1" in [c for c, _ in d.constraints]
    assert f"{num.name} < {den.name}" in [c for c, _ in d.constraints]
    assert day.hi < 0
    for x in d.variables:  # the original lies on the grid of its domain
        assert x.lo <= x.number.value <= x.hi and (x.number.value - x.lo) % x.step == 0


def test_a_percentage_above_100_stays_above_and_one_below_stays_within() -> None:
    d = draft_template("The price rose by 150%, then fell by 20 percent.", "80", id="p")
    up, down = d.variables
    assert up.lo > 100 and ("a > 100", "a percentage above 100, as in the original") in d.constraints
    assert down.hi <= 100 and ("0 <= b <= 100", "a percentage") in d.constraints


def test_the_bundled_samples_draft_load_render_and_pass_check(tmp_path: Path) -> None:
    out = tmp_path / "drafts.yaml"
    report = draft(DraftConfig(data_file=str(SAMPLES), out=str(out)))
    assert len(report.drafts) == 30 and out.read_text(encoding="utf-8") == report.text
    problems = {json.loads(line)["id"]: json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()}
    data = yaml.safe_load(report.text)
    for item in data["templates"]:
        assert item["answer"] == "TODO"
        assert _render_original(item) == problems[item["id"]]["question"]
        assert str(item["original_answer"]) == problems[item["id"]]["answer"]
    # As drafted, every template is refused for its unwritten answer, by name.
    loaded = templates_from_data(data, str(out))
    assert not loaded.templates and {p.field for p in loaded.problems} == {"answer"}
    assert all("still the draft placeholder TODO" in p.reason for p in loaded.problems)

    filled = tmp_path / "filled.yaml"
    filled.write_text(fill(report.text, SAMPLE_ANSWERS), encoding="utf-8")
    checked = check(CheckConfig([str(filled)]))
    assert [f.text() for f in checked.findings if f.severity == "error"] == []
    assert checked.counts["templates"] == 30 and not checked.failed


LATEX = [
    ("Cities $A$ and $B$ are $45$ miles apart. Alicia bikes towards $B$ at 18 miles per hour. Beth bikes toward "
     "$A$ at 12 miles per hour. How many miles from City $A$ will they be when they meet?", "27",
     ("a * b / (b + c)", ["a * b % (b + c) == 0"])),
    ("What is $\\frac{2}{3} + \\frac{1}{6}$? Write it as $\\frac{m}{n}$ in lowest terms and give $m + n$.", "11",
     ("numerator(Fraction(a, b) + Fraction(c, d)) + denominator(Fraction(a, b) + Fraction(c, d))", [])),
    ("A price of $1,200 rises by 2.5\\% a year. What is it after one year, in dollars?", "1230",
     ("a * (1 + b / 100)", ["a * b % 100 == 0"])),
]


@pytest.mark.parametrize(("question", "answer", "filled"), LATEX)
def test_latex_problems_round_trip_and_pass_check(
    question: str, answer: str, filled: tuple[str, list[str]], tmp_path: Path
) -> None:
    text = draft_template(question, answer, id="p").to_yaml()
    item = yaml.safe_load(text)["templates"][0]
    assert _render_original(item) == question
    path = tmp_path / "p.yaml"
    path.write_text(fill(text, {"p": filled}), encoding="utf-8")
    report = check(CheckConfig([str(path)]))
    assert [f.text() for f in report.findings if f.severity == "error"] == []


def test_drafts_of_real_benchmarks_load_and_print_their_originals() -> None:
    """gsm8k (money, thousands, percentages above 100) and the AMC/AIME originals (LaTeX): every draft loads
    once answered, its original values meet its constraints and print the original text byte for byte."""
    from robusteval.data.spec import DataSpec

    problems = [(e.id, e.question, e.answer) for e in DataSpec("gsm8k", str(shared_file("gsm8k/test.jsonl")),
                                                                limit=300).load()]
    for name in ("amc23_test.jsonl", "aime24_test.jsonl"):
        for line in var_math("originals", name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            problems.append((record["id"], record["question"], record["answer"]))
    n_variables = 0
    for pid, question, answer in problems:
        item = yaml.safe_load(draft_template(question, answer, id=pid).to_yaml())["templates"][0]
        assert _render_original(item) == question, pid
        n_variables += len(item.get("variables") or {})
    assert n_variables > 3 * 300  # gsm8k problems hold several numbers each


def test_a_problem_without_numbers_still_drafts_a_loadable_template() -> None:
    d = draft_template("What is the capital of France?", "Paris", id="fr")
    assert not d.variables and any("no number to vary" in note for note in d.notes)
    item = yaml.safe_load(d.to_yaml())["templates"][0]
    assert parse_template({**item, "answer": "1"}).question == "What is the capital of France?"


def test_cli_draft_from_flag_stdin_and_a_csv_with_a_field_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["variants", "draft", "--question", "Tom has 6 apples and eats 2.", "--answer", "4",
                    "--id", "tom"], monkeypatch) == 0
    out = capsys.readouterr().out
    assert "  - id: tom" in out and "answer: TODO  # write it as an expression of a, b; the original answer is 4" in out

    monkeypatch.setattr("sys.stdin", io.StringIO("Sam has 12 pens.\n"))
    assert run_cli(["variants", "draft", "--question", "-", "--id", "sam"], monkeypatch) == 0
    assert "Sam has {{a}} pens." in capsys.readouterr().out

    csv = tmp_path / "p.csv"
    csv.write_text("uid,problem,solution\nq1,Add 20 and 30.,50\n", encoding="utf-8")
    out_file = tmp_path / "d.yaml"
    argv = ["variants", "draft", "--data-file", str(csv), "--dataset", "csv",
            "--fields", "id=uid,question=problem,answer=solution", "--out", str(out_file)]
    assert run_cli(argv, monkeypatch) == 0
    assert "wrote 1 draft template(s)" in capsys.readouterr().out
    item = yaml.safe_load(out_file.read_text(encoding="utf-8"))["templates"][0]
    assert item["id"] == "q1" and item["question"] == "Add {{a}} and {{b}}." and item["original_answer"] == 50

    # An edited draft is never overwritten by accident; misuse is one line, exit 2.
    assert run_cli(argv, monkeypatch) == 2
    assert capsys.readouterr().err.strip().endswith("pass --force to overwrite it")
    assert run_cli(["variants", "draft", "--question", "x 1", "--data-file", str(csv)], monkeypatch) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--question" in err and "--data-file" in err


def test_the_library_refuses_a_missing_problem_source() -> None:
    with pytest.raises(UserError, match="exactly one of question"):
        DraftConfig()
