"""The deterministic arithmetic checker: true and false equations in the formats chains of thought use."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robusteval.judges import ArithmeticJudge, ReasoningItem, Verdict, check_arithmetic, false_equations

TRUE_EQUATIONS = [
    "5 + 3 = 8",
    "16 - 3 - 4 = 9",
    "9 * 2 = 18",
    "9 × 2 = $18",
    "$2 x 9 = $18",
    "2x3=6",
    "48 ÷ 2 = 24",
    "48 / 2 = 24",
    "10 − 3 = 7",  # unicode minus
    "10 – 3 = 7",  # en dash
    "1,200 + 300 = 1,500",
    "$1,234.50 * 2 = $2,469",
    "0.5 * 10 = 5",
    ".5 * 10 = 5.0",
    "20% * 50 = 10",
    "0.25 * 100 = 25%",
    "100% - 20% = 80%",
    "1/4 = 25%",
    "10 / 3 = 3.33",
    "10 / 3 = 3.3",
    "10/3 = 3",  # whole units of a division
    "100 / 3 = 34 boxes",  # rounding up a division
    "2 / 3 = 0.67",
    "2 / 3 = 0.66",  # truncated
    "0.15 * 0.3 = 0.05",  # 0.045 rounded half up
    "(5 + 3) * 2 = 16",
    "5 + 3 * 2 = 11",
    "5^2 = 25",
    "3 - 5 = -2",
    "-5 + 3 = -2",
    "5 * 4 = 20 + 3 = 23",  # running total
    "2 + 2 = 4 = 2 * 2",
    "$5 \\times 3 = 15$",
    "\\frac{1}{2} * 10 = 5",
    "¾ x 4 = 3",
    "2½ * 2 = 5",
    "**5 + 3 = 8**",
    "<<48/2=24>>",
    "1000000 + 1 = 1000001",
]

FALSE_EQUATIONS = [
    ("5 + 3 = 9", "5 + 3 = 9"),
    ("So she has 16 - 3 - 4 = 8 eggs left.", "16 - 3 - 4 = 8"),
    ("9 × 2 = $19", "9 * 2 = $19"),
    ("2x3=5", "2*3=5"),
    ("1,200 + 300 = 1,600", "1,200 + 300 = 1,600"),
    ("1.5 + 2.3 = 4", "1.5 + 2.3 = 4"),  # no precision gained: no room for rounding
    ("10 / 3 = 3.4", "10 / 3 = 3.4"),
    ("10 / 3 = 5", "10 / 3 = 5"),
    ("7 * 1.5 = 10", "7 * 1.5 = 10"),
    ("1000000 + 1 = 1000000", "1000000 + 1 = 1000000"),  # integers compare exactly
    ("(5 + 3) * 2 = 17", "(5 + 3) * 2 = 17"),
    ("5^2 = 24", "5^2 = 24"),
    ("20% * 50 = 15", "20% * 50 = 15"),
    ("5 * 4 = 20 + 3 = 24", "20 + 3 = 24"),
    ("Step 1: 5 + 3 = 9", "5 + 3 = 9"),
    ("- 3 + 4 = 8", "3 + 4 = 8"),  # a bullet, not a minus
    ("Natalia sold 48/2 = <<48/2=25>>25 clips", "48/2=25"),
    ("$32 - $20 = $300", "$32 - $20 = $300"),
]

NOT_CHECKED = [
    "2x + 3 = 7",  # algebra
    "4x = 12",
    "16 eggs - 3 = 13",  # a word inside a side
    "the date 2/3/2020 = the day",
    "on 2020-01-15 = day one",
    "at 3:30 + 10 = 40",  # a time
    "Q2 + 3 = 9",
    "3x +4 - 4 = 28 - 4",
    "Day 2 = 5 * 6",  # a label, then a true equation would be checked; here nothing false is claimed
    "1 dozen = 12",
    "48 = 100% + 20%",  # a correspondence, not an identity
    "5 + 3 ≈ 9",
    "5 + 3 <= 9",
    "5 / 0 = 0",
    "2^100 = 1",
    "The answer is 18.",
    "",
]


@pytest.mark.parametrize("text", TRUE_EQUATIONS)
def test_true_equations_are_found_and_hold(text: str) -> None:
    report = check_arithmetic(text)
    assert report.equations, f"no equation found in {text!r}"
    assert report.ok, [e.to_record() for e in report.false]


@pytest.mark.parametrize(("text", "offending"), FALSE_EQUATIONS)
def test_false_equations_are_reported(text: str, offending: str) -> None:
    bad = false_equations(text)
    assert [e.text for e in bad] == [offending]


@pytest.mark.parametrize("text", NOT_CHECKED)
def test_ambiguous_text_is_never_reported_false(text: str) -> None:
    assert false_equations(text) == []


def test_label_number_is_skipped_but_the_rest_of_the_chain_is_checked() -> None:
    report = check_arithmetic("Day 2 = 5 * 7 = 35")
    assert [(e.text, e.holds) for e in report.equations] == [("5 * 7 = 35", True)]


def test_running_total_is_marked() -> None:
    first, second = check_arithmetic("5 * 4 = 20 + 3 = 23").equations
    assert first.note == "running total" and first.holds and second.holds


def test_a_realistic_chain_of_thought() -> None:
    cot = (
        "The answer is 18. Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4, so she has "
        "16 - 3 - 4 = 9 eggs left. She sells them for $2 each, so she makes 9 * $2 = $18 every day.\n"
        "- 9 x 2 = 18\n"
        "Step 3: 18 / 1 = 18."
    )
    report = check_arithmetic(cot)
    assert len(report.equations) == 4 and report.ok
    wrong = cot.replace("9 * $2 = $18", "9 * $2 = $20")
    assert [e.text for e in false_equations(wrong)] == ["9 * $2 = $20"]


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(-10**6, 10**6),
    b=st.integers(1, 10**6),
    op=st.sampled_from(["+", "-", "*", "×", "x"]),
    delta=st.integers(1, 1000),
)
def test_integer_identities(a: int, b: int, op: str, delta: int) -> None:
    result = a + b if op == "+" else a - b if op == "-" else a * b
    text = f"so {a} {op} {b} = {result}."
    report = check_arithmetic(text)
    assert len(report.equations) == 1 and report.ok, text
    assert len(false_equations(f"so {a} {op} {b} = {result + delta}.")) == 1


@settings(max_examples=100, deadline=None)
@given(q=st.integers(0, 10**5), b=st.integers(1, 999))
def test_exact_divisions_hold(q: int, b: int) -> None:
    assert check_arithmetic(f"{q * b:,} / {b} = {q:,}").ok


def test_arith_judge_verdict_names_the_offending_equations() -> None:
    judge = ArithmeticJudge()
    good = ReasoningItem("q", "ref", "The answer is 8. 5 + 3 = 8.")
    bad = ReasoningItem("q", "ref", "The answer is 8. 5 + 3 = 9, and 2 * 4 = 8.")
    none = ReasoningItem("q", "ref", "The answer is yes. Birds can fly.")
    v_good, v_bad, v_none = judge.judge([good, bad, none])
    assert v_good.label is True and v_good.detail["n_equations"] == 1
    assert v_bad.label is False and v_bad.judge == "arith"
    assert [e["text"] for e in v_bad.detail["false_equations"]] == ["5 + 3 = 9"]
    assert "5 + 3 = 9" in v_bad.raw and v_bad.detail["n_equations"] == 2
    # No equation: nothing to decide on, so arith abstains (it used to call prose correct).
    assert v_none.label is None and v_none.detail["n_equations"] == 0
    assert v_none.abstain_reason == "no equation to check" and v_none.raw == "0 equation(s) checked: abstains"


def test_arith_abstains_without_an_equation_and_decides_with_one() -> None:
    judge = ArithmeticJudge()
    prose = ReasoningItem("q", "ref", "The answer is 44. The 28 cones are shablo's 60 pages to school.")
    true_eq = ReasoningItem("q", "ref", "The answer is 44. She has 16 + 28 = 44 cones.")
    false_eq = ReasoningItem("q", "ref", "The answer is 44. She has 16 + 28 = 45 cones, and 2 * 3 = 6.")
    v_prose, v_true, v_false = judge.judge([prose, true_eq, false_eq])
    assert (v_prose.label, v_prose.abstained, v_prose.abstain_reason) == (None, True, "no equation to check")
    assert v_prose.raw == "0 equation(s) checked: abstains"
    assert v_true.label is True and v_true.abstain_reason is None and "abstained" not in v_true.detail
    assert v_false.label is False and v_false.abstain_reason is None
    # The reason survives the store's record round trip.
    assert Verdict.from_record(v_prose.to_record()).abstain_reason == "no equation to check"
    assert ArithmeticJudge.identity["version"] == 2


def test_arith_judge_checks_only_the_candidate() -> None:
    item = ReasoningItem("What is 2 + 2 = 5?", "The answer is 4. 2 + 2 = 5", "The answer is 4. 2 + 2 = 4")
    assert ArithmeticJudge().judge([item])[0].label is True
