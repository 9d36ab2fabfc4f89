"""Grading bugs found by checking robusteval against a peer grader (issue 13): factorials in answers,
spelled-out numbers, membership and inequality forms of intervals; and their near relatives."""

from __future__ import annotations

import pytest

from robusteval.data.answers import (
    answers_match,
    extract_answer_first,
    extract_final_answer,
    normalize_number,
    parse_number,
)

# ---------------------------------------------------------------------------------------------------------
# factorials: "\boxed{5!}" is 120, not 5
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("There are $5$ people, so \\boxed{5!} orders.", "5!"),
        ("So \\boxed{n!}.", "n!"),
        ("The answer is $5!$.", "5!"),
        ("The answer is \\(3!\\)", "3!"),
        # Prose: an exclamation mark ends the sentence, it is no factorial.
        ("The answer is 18!", "18"),
        ("The answer is 18! What fun.", "18"),
    ],
)
def test_extract_final_answer_keeps_a_factorial(text: str, expected: str) -> None:
    assert extract_final_answer(text) == expected


def test_answer_first_keeps_a_factorial_in_math_mode_only() -> None:
    assert extract_answer_first("The answer is $4!$. There are 4 seats.", "math") == "4!"
    assert extract_answer_first("The answer is 24! There are 4 seats.", "math") == "24"


@pytest.mark.parametrize(("predicted", "gold"), [("5!", "120"), ("5!", "5!"), ("120", "5!"), ("-3!", "-6"),
                                                 ("2 \\cdot 3!", "12"), ("0!", "1")])
def test_factorial_answers_compare_by_value(predicted: str, gold: str) -> None:
    assert answers_match(predicted, gold, "math")
    assert answers_match(gold, predicted, "math")


@pytest.mark.parametrize(("predicted", "gold"), [("5!", "5"), ("5", "5!"), ("3!", "3"), ("5!", "119")])
def test_factorial_is_not_its_argument(predicted: str, gold: str) -> None:
    assert not answers_match(predicted, gold, "math")


def test_number_answers_read_a_boxed_factorial() -> None:
    text = "Five people sit in \\boxed{5!} ways."
    assert extract_final_answer(text, "number") == "5!"
    assert answers_match("5!", "120", "number")
    assert not answers_match("5!", "5", "number")
    # In prose the exclamation mark is punctuation, as before.
    assert extract_final_answer("The answer is 18!", "number") == "18"
    assert parse_number("4!") == 24.0
    assert normalize_number("I got 18! Then 3.") == 18.0  # free text: never a factorial


def test_huge_factorial_is_left_to_the_bounded_symbolic_path() -> None:
    assert parse_number("100000!") is None
    assert not answers_match("100000!", "5", "math", timeout=0.5)


# ---------------------------------------------------------------------------------------------------------
# spelled-out numbers
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("five", "5"),
        ("Five", "5"),
        ("twenty-one", "21"),
        ("twenty one", "21"),
        ("one hundred and five", "105"),
        ("one hundred five", "105"),
        ("a hundred", "100"),
        ("two thousand and twenty-four", "2024"),
        ("three million", "3000000"),
        ("nineteen hundred", "1900"),
        ("zero", "0"),
        ("minus seven", "-7"),
        ("negative twelve", "-12"),
        ("five apples", "5"),
        ("fifty percent", "0.5"),
        ("\\text{five}", "5"),
        ("(two, three)", "(2, 3)"),
    ],
)
def test_spelled_out_numbers_match_their_value(predicted: str, gold: str) -> None:
    assert answers_match(predicted, gold, "math")
    assert answers_match(gold, predicted, "math")


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("five", "6"),
        ("fivefold", "5"),
        ("one half", "1"),  # a fraction word: not the number one
        ("two thirds", "2"),
        ("five times ten", "5"),
        ("three point five", "3"),
        ("five five", "5"),
        ("one", "0"),
        ("none", "1"),
    ],
)
def test_spelled_out_numbers_do_not_over_match(predicted: str, gold: str) -> None:
    assert not answers_match(predicted, gold, "math")


def test_spelled_out_answers_are_extracted_and_graded() -> None:
    assert extract_final_answer("Each friend gets the same share. The answer is five.") == "five"
    assert answers_match(extract_final_answer("So the answer is twenty-one."), "21", "math")
    assert extract_answer_first("The answer is one hundred and five apples. Because", "number") == \
        "one hundred and five"
    assert answers_match("one hundred and five", "105", "number")
    assert not answers_match("one hundred and five", "1", "number")
    assert normalize_number("He had two thousand and twenty-four coins.") == 2024.0


# ---------------------------------------------------------------------------------------------------------
# intervals: "x \in [2, 5]" is "[2, 5]"; inequalities; unions
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("x \\in [2, 5]", "[2,5]"),
        ("x\\in(2,5]", "(2,5]"),
        ("t \\in [0, \\infty)", "[0,\\infty)"),
        ("x ∈ [2, 5]", "[2,5]"),
        ("x \\in \\left[2, 5\\right]", "[2,5]"),
        ("x \\in \\{1, 2\\}", "\\{2, 1\\}"),
        ("x \\in [\\frac{1}{2}, 3)", "[0.5, 3)"),
        ("x \\in [2, 5]", "y \\in [2, 5]"),
        ("[0, ∞)", "[0,\\infty)"),
        # Inequalities name the same set.
        ("2 \\le x \\le 5", "[2,5]"),
        ("2 < x \\leq 5", "(2,5]"),
        ("5 \\geq x > 2", "(2,5]"),
        ("x > 2", "(2, \\infty)"),
        ("x \\ge 2", "[2,\\infty)"),
        ("x >= 2", "[2, \\infty)"),
        ("x \\le -1", "(-\\infty, -1]"),
        ("-1 \\geq x", "(-\\infty, -1]"),
        ("x ≤ 3", "(-\\infty, 3]"),
        ("x > \\pi", "(\\pi, \\infty)"),  # a constant is a bound, not a second variable
        ("\\theta \\le \\frac{\\pi}{2}", "(-\\infty, \\frac{\\pi}{2}]"),
        ("x \\in [2, 5]", "2 \\le x \\le 5"),
        # Unions in any order.
        ("(-\\infty, 2) \\cup (5, \\infty)", "(5,\\infty)\\cup(-\\infty,2)"),
        ("x \\in (-\\infty, 2) \\cup (5, \\infty)", "(-\\infty,2)\\cup(5,\\infty)"),
        ("(-\\infty, \\frac{1}{2}] \\cup [3, \\infty)", "(-\\infty,0.5]\\cup[3,\\infty)"),
    ],
)
def test_interval_forms_match(predicted: str, gold: str) -> None:
    assert answers_match(predicted, gold, "math")
    assert answers_match(gold, predicted, "math")


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("x\\in[2,5]", "(2,5]"),  # the ends still matter
        ("x \\in (2, 5)", "[2,5)"),
        ("2 < x < 5", "[2,5]"),
        ("x > 2", "[2, \\infty)"),
        ("x < 2", "(2, \\infty)"),
        ("2 < x > 5", "(2,5)"),  # not an interval
        ("(-\\infty, 2] \\cup (5, \\infty)", "(-\\infty,2)\\cup(5,\\infty)"),
        ("(-\\infty, 2) \\cup (5, \\infty)", "(-\\infty,2)"),
        ("x \\in [2, 5]", "[2, 6]"),
        ("x = 2", "[2, 2]"),
    ],
)
def test_interval_forms_still_distinguish(predicted: str, gold: str) -> None:
    assert not answers_match(predicted, gold, "math")
    assert not answers_match(gold, predicted, "math")


# ---------------------------------------------------------------------------------------------------------
# near relatives found while fixing the above
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("predicted", "gold"), [("\\infty", "5"), ("-\\infty", "2"), ("(-\\infty, 2)", "(2, \\infty)"),
                                                 ("10^{400}", "10^{400} + 1"), ("-\\infty", "\\infty")])
def test_infinity_is_not_within_relative_tolerance_of_everything(predicted: str, gold: str) -> None:
    # |inf - 5| <= 1e-4 * inf held, so "\infty" equalled every number.
    assert not answers_match(predicted, gold, "math")
    assert answers_match(predicted, predicted, "math")


@pytest.mark.parametrize(("predicted", "gold", "expected"), [
    ("50 percent", "0.5", True),  # "percent" was stripped as a unit word, leaving 50
    ("5 thousand", "5000", True),
    ("2.5 million", "2500000", True),
    ("5 thousand", "5", False),
    ("5 times 10", "5", False),  # "times" is no unit
    ("3 halves", "3", False),
    ("5 apples", "5", True),
])
def test_words_after_a_number(predicted: str, gold: str, expected: bool) -> None:
    assert answers_match(predicted, gold, "math") is expected


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("1,000,000", "10^6"),  # thousands separators were split into the list 1, 000, 000
        ("1,000", "10^3"),
        ("\\{2\\}", "2"),  # a one-element set is its element
        ("\\emptyset", "\\{\\}"),
        ("\\varnothing", "\\emptyset"),
        ("\\mathbb{R}", "(-\\infty,\\infty)"),
        ("\\pm 2", "2, -2"),
        ("1 \\pm \\sqrt{2}", "1-\\sqrt{2}, 1+\\sqrt{2}"),
        ("x=2 \\text{ or } x=3", "2, 3"),
        ("7 \\text{ and } 8", "7, 8"),
        ("2, 3", "x=2, x=3"),
        ("a=2, b=3", "(2,3)"),
        ("y = 3, x = 2", "(2, 3)"),
        ("3:4", "\\frac34"),
    ],
)
def test_other_ways_to_write_sets_lists_and_numbers(predicted: str, gold: str) -> None:
    assert answers_match(predicted, gold, "math")
    assert answers_match(gold, predicted, "math")


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("\\{2, 3\\}", "2"),
        ("\\{2\\}", "3"),
        ("(2)", "\\{2, 2\\}"),
        ("\\pm 2", "2"),
        ("x=2 \\text{ or } x=3", "2, 4"),
        ("a=2, b=3", "(3,2)"),
        ("\\mathbb{R}", "(0, \\infty)"),
        ("\\emptyset", "\\{0\\}"),
        ("3:4", "\\frac43"),
        ("one hundred and five", "100, 5"),
    ],
)
def test_other_ways_still_distinguish(predicted: str, gold: str) -> None:
    assert not answers_match(predicted, gold, "math")
    assert not answers_match(gold, predicted, "math")


# ---------------------------------------------------------------------------------------------------------
# a grader bug is an error, never a wrong answer (issue 38, item 6)
# ---------------------------------------------------------------------------------------------------------


def test_unparsable_math_answer_is_still_unequal() -> None:
    from robusteval.data.answers.symbolic import _symbolic_equal_batch, _to_tokens

    # "(2x+2" tokenizes but the parser refuses it (missing ")"): a wrong answer, not an error.
    pair = (_to_tokens("(2x+2"), _to_tokens("2x+2"))
    assert pair[0] is not None and pair[1] is not None
    assert _symbolic_equal_batch([pair], 1e-6) == [False]
    assert not answers_match("(2x+2", "2x+2", "math")
    assert answers_match("2(x+1)", "2x+2", "math")  # the same path, equal


def test_unexpected_error_in_symbolic_comparison_propagates(monkeypatch: pytest.MonkeyPatch) -> None:
    import robusteval.workers
    from robusteval.data.answers import symbolic

    def broken(*args: object) -> bool:
        raise RuntimeError("grader bug")

    # In-process (no worker), so the patched comparison is the one that runs.
    monkeypatch.setattr(robusteval.workers._pool, "broken", True)
    monkeypatch.setattr(symbolic, "_symbolic_equal_one", broken)
    with pytest.raises(RuntimeError, match="grader bug"):
        symbolic._symbolic_equal_batch([(symbolic._to_tokens("2(x+1)"), symbolic._to_tokens("2x+2"))], 1e-6)
    with pytest.raises(RuntimeError, match=r"symbolic answer comparison failed: .*grader bug"):
        answers_match("2(x+1)", "2x+2", "math")
