"""Tests for robusteval.data.answers: extraction, normalization and grading of model answers."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robusteval.data import answers
from robusteval.data.answers import (
    answers_match,
    extract_answer_first,
    extract_final_answer,
    normalize_number,
    normalize_yesno,
    split_answer_and_cot,
)

# Deterministic, quick property runs: the suite must stay well under a few seconds.
PROPS = settings(derandomize=True, max_examples=60, deadline=None)

# ---------------------------------------------------------------------------------------------------------
# normalize_number
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234", 1234.0),
        ("1,234,567", 1234567.0),
        ("$5.50", 5.5),
        ("$1,234.50", 1234.5),
        ("50%", 50.0),
        ("50 percent", 50.0),
        ("12.5\\%", 12.5),
        ("-3", -3.0),
        ("+7", 7.0),
        ("\u22125", -5.0),  # unicode minus
        ("-$5", -5.0),
        ("$-5", -5.0),
        ("3/4", 0.75),
        ("3 / 4", 0.75),
        ("2 1/2", 2.5),
        ("2 1/2, then more", 2.5),
        ("2 3/2", 2.0),  # improper: not a mixed number, just the first number
        ("12 apples", 12.0),
        ("\\frac{3}{4}", 0.75),
        ("\\dfrac{-3}{4}", -0.75),
        ("-\\frac{3}{4}", -0.75),
        ("\\frac34", 0.75),
        ("2\\frac{1}{2}", 2.5),
        ("\\$18", 18.0),
        ("18.", 18.0),
        ("is 18.", 18.0),
        ("2.5.", 2.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("1.5e-3", 0.0015),
        ("1.5 \\times 10^{3}", 1500.0),
        ("2 \\cdot 10^3", 2000.0),
        ("1{,}000", 1000.0),
        ("1\\,000", 1000.0),
        ("\\boxed{5}", 5.0),
        ("\u00bd", 0.5),
        ("2\u00bd", 2.5),
        ("\uff11\uff18", 18.0),  # full-width digits
        ("eighteen", 18.0),
        ("twenty-one apples", 21.0),
        ("x = 7", 7.0),
        ("12/25/2020", 12.0),  # a date is not a fraction
        ("3/0", 3.0),
    ],
)
def test_normalize_number(text: str, expected: float) -> None:
    assert normalize_number(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "no number here", "yes", "$", "-", "N/A", "x-y", "v2"])
def test_normalize_number_none(text: str) -> None:
    assert normalize_number(text) is None


def test_comma_followed_by_space_separates_numbers() -> None:
    assert normalize_number("1, 2") == 1.0
    assert normalize_number("1,2") == 1.0
    assert normalize_number("1,2345") == 1.0  # not a valid thousands group
    assert extract_final_answer("The roots are 1, 2", "number") == "2"


def test_huge_numbers_do_not_hang() -> None:
    start = time.monotonic()
    assert normalize_number("1e999999999") == float("inf")
    assert normalize_number("9" * 5000) == float("inf")
    assert normalize_number("1e-999999999") == 0.0
    assert time.monotonic() - start < 1.0


@PROPS
@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(["", "$", "\\$"]), st.booleans())
def test_formatted_integer_round_trips(n: int, currency: str, commas: bool) -> None:
    body = f"{abs(n):,}" if commas else str(abs(n))
    sign = "-" if n < 0 else ""
    assert normalize_number(f"{sign}{currency}{body}") == float(n)
    assert normalize_number(f"{currency}{sign}{body}") == float(n)
    assert normalize_number(f"The total is {sign}{currency}{body}.") == float(n)


@PROPS
@given(st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False, allow_infinity=False))
def test_formatted_decimal_round_trips(d: Decimal) -> None:
    assert normalize_number(f"{d:,.2f}") == pytest.approx(float(d), rel=1e-12, abs=1e-12)
    assert normalize_number(f"${d:,.2f}.") == pytest.approx(float(d), rel=1e-12, abs=1e-12)


@PROPS
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**6))
def test_fractions_round_trip(num: int, den: int) -> None:
    assert normalize_number(f"{num}/{den}") == pytest.approx(num / den)
    assert normalize_number(f"\\frac{{{num}}}{{{den}}}") == pytest.approx(num / den)


# ---------------------------------------------------------------------------------------------------------
# normalize_yesno
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", "yes"),
        ("yes.", "yes"),
        ("YES, because it rains", "yes"),
        ("True", "yes"),
        ("**Yes**", "yes"),
        ("\\boxed{Yes}", "yes"),
        ("\\text{yes}", "yes"),
        ('"yes"', "yes"),
        ("y", "yes"),
        ("No", "no"),
        ("no.", "no"),
        ("False", "no"),
        ("NO!", "no"),
        ("n", "no"),
        ("The answer is yes.", "yes"),
        ("I think the answer is no, since", "no"),
        ("Yesterday it rained", None),
        ("Not sure", None),
        ("Nothing", None),
        ("maybe", None),
        ("", None),
    ],
)
def test_normalize_yesno(text: str, expected: str | None) -> None:
    assert normalize_yesno(text) == expected


@PROPS
@given(
    st.sampled_from(["yes", "no", "true", "false"]),
    st.lists(st.booleans(), min_size=5, max_size=5),
    st.sampled_from(["", ".", "!", ", because"]),
)
def test_yesno_is_case_and_punctuation_insensitive(word: str, upper: list[bool], tail: str) -> None:
    cased = "".join(c.upper() if u else c for c, u in zip(word, upper, strict=False))
    assert normalize_yesno(cased + tail) == {"yes": "yes", "true": "yes", "no": "no", "false": "no"}[word]


# ---------------------------------------------------------------------------------------------------------
# extract_answer_first / split_answer_and_cot
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" The answer is 18. Because 3 * 6 = 18.", "18"),
        ("The answer is $1,234.50. Because the sum is large.", "$1,234.50"),
        ("the answer is -3. Since 2 - 5 = -3.", "-3"),
        ("THE ANSWER IS 42", "42"),
        ("Answer: 3/4. We halve...", "3/4"),
        ("The answer is 50%. Half of them.", "50%"),
        ("The answer is 12 apples. She had 3 bags of 4.", "12"),
        ("The answer is \\boxed{5}. Because 2 + 3.", "5"),
        ("The answer is $18$. Because", "18"),
        ("The answer is 2.5. Then 7 more.", "2.5"),
        ("The answer is \u22124. Because", "-4"),
        ("The answer is eighteen. Because 3 * 6 = 18.", "eighteen"),
        ("The answer is approx. 18. Because", "18"),
        ("**The answer is 7.** Because 3 + 4 = 7.", "7"),
        ("The answer is:\n\n42\nBecause", "42"),
        ("The final answer is 9. First, 3 * 3.", "9"),
        # The FIRST statement wins: a later, different claim in the CoT must not override it.
        ("The answer is 7. Because 3 + 4 = 7. So the answer is 8.", "7"),
        # A number after the answer sentence is not the answer.
        ("The answer is unknown. Because 3 * 6 = 18.", None),
        ("No answer phrase here, just 18.", None),
        ("", None),
    ],
)
def test_extract_answer_first_number(text: str, expected: str | None) -> None:
    assert extract_answer_first(text, "number") == expected


@pytest.mark.parametrize(
    ("text", "answer_type", "expected"),
    [
        ("The answer is yes. Because no one objects.", "yesno", "yes"),
        ("The answer is No, because yes is wrong.", "yesno", "no"),
        ("The answer is **True**.", "yesno", "yes"),
        ("The answer is maybe. Yes, no.", "yesno", None),
        ("The answer is (B). Because A is wrong.", "label", "(B)"),
        ("The answer is Paris. It is the capital.", "text", "Paris"),
        ("The answer is $\\frac{1}{2}$. Because", "math", "\\frac{1}{2}"),
        ("The answer is \\boxed{\\sqrt{2}}. Because", "math", "\\sqrt{2}"),
        ("The answer is 5 because 2 + 3 = 5.", "math", "5"),
        ("nothing", "math", None),
    ],
)
def test_extract_answer_first_other_types(text: str, answer_type: str, expected: str | None) -> None:
    assert extract_answer_first(text, answer_type) == expected


@PROPS
@given(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([" Because 3 + 4 = 7.", " 1, 2, 3.", "", "\nStep 1: 5."]),
)
def test_extract_answer_first_reads_stated_integer(n: int, cot: str) -> None:
    text = f"The answer is {n}.{cot}"
    assert extract_answer_first(text, "number") == str(n)
    assert split_answer_and_cot(text) == (f"The answer is {n}.", cot.strip())


@PROPS
@given(st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False, allow_infinity=False))
def test_extract_answer_first_reads_stated_decimal(d: Decimal) -> None:
    text = f"The answer is {d}. Because reasons."
    got = extract_answer_first(text, "number")
    assert got is not None
    assert answers_match(got, str(d), "number")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" The answer is 18. Because 3 * 6 = 18.", ("The answer is 18.", "Because 3 * 6 = 18.")),
        ("The answer is $1,234.50. Because it is.", ("The answer is $1,234.50.", "Because it is.")),
        ("The answer is 2.5. Half of 5.", ("The answer is 2.5.", "Half of 5.")),
        ("The answer is 3.14159! Pi.", ("The answer is 3.14159!", "Pi.")),
        ("The answer is 7", ("The answer is 7", "")),
        ("The answer is 7.\n\nStep 1: add.", ("The answer is 7.", "Step 1: add.")),
        ("The answer is e.g. 5. Because", ("The answer is e.g. 5.", "Because")),
        ("**The answer is 18.** Because three.", ("**The answer is 18.**", "Because three.")),
        ('The answer is "no." Then', ('The answer is "no."', "Then")),
        ("The answer is B. Because A fails.", ("The answer is B.", "Because A fails.")),
        ("The answer is $\\frac{1}{2}.$ Because", ("The answer is $\\frac{1}{2}.$", "Because")),
        # Reasoning before the answer is kept rather than silently dropped.
        ("Let me think. The answer is 4. Since 2 + 2.", ("The answer is 4.", "Let me think. Since 2 + 2.")),
        ("  No phrase at all.  ", ("", "No phrase at all.")),
    ],
)
def test_split_answer_and_cot(text: str, expected: tuple[str, str]) -> None:
    assert split_answer_and_cot(text) == expected


# ---------------------------------------------------------------------------------------------------------
# extract_final_answer
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("So $x = \\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
        ("First \\boxed{1}, then finally \\boxed{\\sqrt{3}}.", "\\sqrt{3}"),
        (
            "Nested: \\boxed{\\frac{\\sqrt{2}}{\\left(1+x\\right)^{2}}}",
            "\\frac{\\sqrt{2}}{\\left(1+x\\right)^{2}}",
        ),
        ("We get \\fbox{7}.", "7"),
        ("So \\boxed 5$.", "5"),
        ("Final Answer: The final answer is $18$. I hope it is correct.", "18"),
        ("The answer is 3. Wait, no: the answer is 4.", "4"),
        ("Add 3 and 4 to get 7.", "7"),
        ("The result is -2.5", "-2.5"),
        # A truncated box is skipped in favour of an earlier complete one.
        ("\\boxed{2} and then \\boxed{\\frac{1}{", "2"),
        ("No numbers here.", None),
    ],
)
def test_extract_final_answer_math(text: str, expected: str | None) -> None:
    assert extract_final_answer(text) == expected


def test_extract_final_answer_other_types() -> None:
    assert extract_final_answer("The total is \\boxed{\\$1,234}.", "number") == "\\$1,234"
    assert extract_final_answer("So the answer is 12 apples.", "number") == "12"
    assert extract_final_answer("Thus she pays $18$ in total.", "number") == "18"
    assert extract_final_answer("Is it? Yes. Actually, no.", "yesno") == "no"
    assert extract_final_answer("\\boxed{Yes}", "yesno") == "yes"
    assert extract_final_answer("Answer: (C)", "label") == "(C)"
    assert extract_final_answer("I pick C, 3 times.", "label") is None


# ---------------------------------------------------------------------------------------------------------
# answers_match: number / yesno / text / label
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("18", "18", True),
        ("18.0", "18", True),
        ("$18.00", "18", True),
        ("1,234", "1234", True),
        ("0.75", "3/4", True),
        ("3/4", "0.75", True),
        ("2 1/2", "2.5", True),
        ("50%", "50", True),
        ("50%", "0.5", True),
        ("0.5", "50%", True),
        ("50", "0.5", False),
        ("12 apples", "12", True),
        ("-3", "\u22123", True),
        ("3", "-3", False),
        ("1.00005", "1", True),  # within rel_tol 1e-4
        ("1.001", "1", False),
        ("100001", "100000", False),  # integers compare exactly, whatever the tolerance
        ("12345678901234567891", "12345678901234567890", False),
        ("0", "0.0", True),
        ("0.00001", "0", False),
        ("1e-10", "0", True),  # absolute tolerance near zero
        ("eighteen", "18", True),
        ("", "18", False),
        ("no idea", "18", False),
        (None, "18", False),
    ],
)
def test_answers_match_number(predicted: str | None, gold: str, expected: bool) -> None:
    assert answers_match(predicted, gold, "number") is expected


def test_answers_match_number_rel_tol() -> None:
    assert answers_match("101.5", "100.0", "number", rel_tol=0.02)
    assert not answers_match("103", "100.5", "number", rel_tol=0.02)
    assert not answers_match("101", "100", "number", rel_tol=0.02)  # both integral: exact


@PROPS
@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_answers_match_is_reflexive_on_numbers(x: int | float) -> None:
    assert answers_match(repr(x), repr(x), "number")
    assert answers_match(str(x), str(x), "math")


@PROPS
@given(st.integers(min_value=-(10**9), max_value=10**9))
def test_percent_matches_either_convention(n: int) -> None:
    frac = Fraction(n, 100)
    assert answers_match(f"{n}%", str(n), "number")
    assert answers_match(f"{n}%", f"{frac.numerator}/{frac.denominator}", "number")


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("Yes", "yes", True),
        ("yes.", "Yes", True),
        ("TRUE", "yes", True),
        ("No, because", "no", True),
        ("False", "no", True),
        ("no", "yes", False),
        ("maybe", "no", False),
        ("maybe", "maybe", False),  # not a yes/no answer at all
    ],
)
def test_answers_match_yesno(predicted: str, gold: str, expected: bool) -> None:
    assert answers_match(predicted, gold, "yesno") is expected


@pytest.mark.parametrize(
    ("predicted", "gold", "answer_type", "expected"),
    [
        ("Paris.", "paris", "text", True),
        ("  New   York ", "new york", "text", True),
        ("**Paris**", "Paris", "text", True),
        ('"Paris"', "Paris", "text", True),
        ("Paris, France", "Paris", "text", False),
        ("London", "Paris", "text", False),
        ("(B)", "B", "label", True),
        ("b)", "B", "label", True),
        ("Option B", "B", "label", True),
        ("positive.", "Positive", "label", True),
        ("A", "B", "label", False),
    ],
)
def test_answers_match_text_and_label(predicted: str, gold: str, answer_type: str, expected: bool) -> None:
    assert answers_match(predicted, gold, answer_type) is expected


@PROPS
@given(st.text(alphabet="abcdefghij XYZ", min_size=1, max_size=20).filter(lambda s: s.strip()))
def test_text_match_ignores_case_space_and_trailing_punctuation(s: str) -> None:
    assert answers_match(f"  {s.upper()}.", s, "text")
    assert answers_match(s, s.lower() + "!", "label")


def test_unknown_answer_type_is_an_error() -> None:
    with pytest.raises(ValueError, match="answer_type"):
        answers_match("1", "1", "bogus")


# ---------------------------------------------------------------------------------------------------------
# answers_match: math
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        # Decided without sympy: string identity after clean-up, or numeric.
        ("\\frac{1}{2}", "0.5"),
        ("\\dfrac{1}{2}", "\\frac12"),
        ("$\\frac{3}{4}$", "0.75"),
        ("x = 5", "5"),
        ("50\\%", "50"),
        ("30^\\circ", "30"),
        ("5 \\text{ cm}", "5"),
        ("18 dollars", "18"),
        ("\\$18", "18"),
        ("1{,}000", "1000"),
        ("\\boxed{7}", "7"),
        ("\\left(1, 2\\right)", "(1,2)"),
        ("\\text{(C)}", "C"),
        # Symbolic.
        ("2\\sqrt{3}", "\\sqrt{12}"),
        ("2*sqrt(3)", "2\\sqrt{3}"),
        ("\\frac{\\pi}{2}", "\\pi/2"),
        ("\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}"),
        ("x^2+2x+1", "(x+1)^2"),
        ("\\left(x+1\\right)\\cdot(x-1)", "x^2-1"),
        ("y = 2x + 1", "2x + 1 = y"),
        ("2^{10}", "1024"),
        ("5!", "120"),
        ("e^{i\\pi}", "-1"),
        ("3+4i", "4i+3"),
        ("\\sqrt[3]{8}", "2"),
        ("\\log_2 8", "3"),
        ("\\binom{5}{2}", "10"),
        ("|x|", "\\left|x\\right|"),
        ("\\sin^2 x + \\cos^2 x", "1"),
        ("\\frac{1}{x}", "x^{-1}"),
        ("2ab", "2 b a"),
        ("5\\sqrt{2} \\text{ cm}", "\\sqrt{50}"),
        ("\\pi", "3.14159"),
        # Tuples in order, sets and bare lists in any order.
        ("(2\\sqrt{2}, 1)", "(\\sqrt{8}, 1)"),
        ("\\{1, 2\\}", "\\{2, 1\\}"),
        ("3, 1", "1,3"),
        ("[0, \\infty)", "[0,\\infty)"),
    ],
)
def test_math_equivalent(predicted: str, gold: str) -> None:
    assert answers_match(predicted, gold, "math")
    assert answers_match(gold, predicted, "math")


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("2\\sqrt{3}", "2"),  # "first number" would wrongly say 2
        ("\\frac{3}{4}", "\\frac{4}{3}"),
        ("x^2", "x^3"),
        ("\\sin x", "\\sin^2 x"),
        ("(2, 1)", "(1,2)"),  # order matters in tuples
        ("[0, 1)", "[0,1]"),  # and so do interval brackets
        ("(1, 2)", "1, 2, 3"),
        ("\\pi", "3.14"),
        ("x \\in [0,1]", "[0,1)"),  # membership names the set, whose ends still matter (issue 13)
        ("", "1"),
        ("1", ""),
    ],
)
def test_math_not_equivalent(predicted: str, gold: str) -> None:
    assert not answers_match(predicted, gold, "math")


def test_math_never_evaluates_python() -> None:
    # Names are whitelisted by the tokenizer; anything else is compared as text, never executed.
    assert not answers_match("__import__('os').system('echo hacked')", "0", "math")
    assert not answers_match("().__class__", "1", "math")
    assert answers_match("lambda", "\\lambda", "math")


def test_math_timeout_returns_false_without_hanging() -> None:
    start = time.monotonic()
    assert not answers_match("2^{10^{10}}", "3", "math", timeout=0.2)
    assert time.monotonic() - start < 5.0
    # The killed worker is replaced transparently.
    assert answers_match("\\sqrt{8}", "2\\sqrt{2}", "math")


def test_math_zero_timeout_skips_sympy() -> None:
    assert not answers_match("\\sqrt{8}", "2\\sqrt{2}", "math", timeout=0)
    assert answers_match("\\frac{1}{2}", "0.5", "math", timeout=0)  # numeric needs no sympy


def test_math_off_the_main_thread() -> None:
    # Evaluation runners grade from worker threads, where SIGALRM is unavailable: the process worker still works.
    results: list[bool] = []

    def work() -> None:
        results.append(answers_match("\\sqrt{18}", "3\\sqrt{2}", "math"))
        results.append(answers_match("\\sqrt{18}", "3", "math"))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert results == [True, False]


def test_run_with_timeout_kills_overrunning_call() -> None:
    assert answers._run_with_timeout(divmod, (7, 2), 5.0) == ("ok", (3, 1))
    status, message = answers._run_with_timeout(divmod, (1, 0), 5.0)
    assert status == "err"
    assert "ZeroDivisionError" in message
    start = time.monotonic()
    assert answers._run_with_timeout(time.sleep, (30,), 0.2) == ("timeout", None)
    assert time.monotonic() - start < 5.0


@pytest.mark.timeout(0)  # pytest-timeout's own SIGALRM timer would be a timer in use: no per-test bound here
def test_inline_fallback_uses_alarm_on_main_thread() -> None:
    assert threading.current_thread() is threading.main_thread()
    start = time.monotonic()
    assert answers._call_inline(time.sleep, (30,), 0.1) == ("timeout", None)
    assert time.monotonic() - start < 2.0
    assert answers._call_inline(divmod, (7, 2), 1.0) == ("ok", (3, 1))
