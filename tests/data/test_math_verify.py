"""The optional math-verify grader (``--math-grader math-verify``) and a cross-check of robusteval's builtin
grader against it on stress cases: they must agree except on the listed, justified disagreements."""

from __future__ import annotations

import threading
import time

import pytest

from helpers.shared import needs_modules
from robusteval.data.answers import Verdict, check_math_grader, grade_answer
from robusteval.errors import UserError
from robusteval.workers import run_with_timeout

needs_math_verify = needs_modules("math_verify", "latex2sympy2_extended", "antlr4")

# (extracted answer, gold answer): forms a model writes, in the families graders get wrong.
STRESS = [
    # fractions
    ("\\frac{1}{2}", "0.5"), ("\\dfrac{3}{4}", "\\frac34"), ("\\frac{2}{4}", "\\frac{1}{2}"), ("1/3", "\\frac{1}{3}"),
    ("0.333", "\\frac{1}{3}"), ("-\\frac{3}{4}", "-0.75"), ("\\frac{3}{4}", "\\frac{4}{3}"),
    ("2\\frac{1}{2}", "\\frac{5}{2}"),
    # intervals
    ("[2, 5]", "[2,5]"), ("x \\in [2, 5]", "[2,5]"), ("x\\in(2,5]", "(2,5]"), ("x\\in[2,5]", "(2,5]"),
    ("2 \\le x \\le 5", "[2,5]"), ("x \\ge 2", "[2, \\infty)"),
    ("(-\\infty, 2) \\cup (5, \\infty)", "(5,\\infty)\\cup(-\\infty,2)"), ("[0, 1)", "[0,1]"),
    # sets and tuples
    ("\\{1, 2, 3\\}", "\\{3, 2, 1\\}"), ("\\{1, 2\\}", "\\{1, 2, 3\\}"), ("(1, 2)", "(2, 1)"), ("(3, -4)", "(3,-4)"),
    ("(\\frac{1}{2}, 3)", "(0.5, 3)"), ("1, 2", "2, 1"), ("\\{2\\}", "2"), ("a=2, b=3", "(2,3)"),
    ("\\pm 2", "2, -2"),
    # percent
    ("50\\%", "50"), ("50\\%", "0.5"), ("12.5\\%", "0.125"), ("5\\%", "50"),
    # units and degrees
    ("5 \\text{ cm}", "5"), ("18 \\text{ dollars}", "18"), ("30^\\circ", "30"), ("\\$1,234.50", "1234.5"),
    ("12 \\text{ cm}^2", "12"), ("1,000,000", "10^6"),
    # factorials
    ("5!", "120"), ("5!", "5"), ("3! \\cdot 2", "12"),
    # spelled-out numbers
    ("five", "5"), ("twenty-one", "21"), ("one hundred and five", "105"),
    # square roots
    ("\\sqrt{8}", "2\\sqrt{2}"), ("\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}"), ("2\\sqrt{3}", "2"),
    ("\\sqrt{12}", "3.4641"), ("\\sqrt[3]{27}", "3"),
    # pi
    ("2\\pi", "6.2832"), ("\\pi", "3.14159"), ("\\frac{\\pi}{2}", "\\pi/2"), ("\\pi", "3.14"), ("3\\pi", "9\\pi/3"),
    # equations and expressions
    ("x = 5", "5"), ("y = 2x + 1", "2x + 1 = y"), ("(x+1)^2", "x^2+2x+1"), ("x^2", "x^3"), ("2^{10}", "1024"),
    ("1{,}000", "1000"), ("10^{-3}", "0.001"),
]  # fmt: skip

# Where the graders differ and robusteval's verdict is the right one (both verdicts are checked, so an entry
# goes stale, and fails, when either grader changes its mind).
_INEQUALITY = ("the same set: math-verify compares a relation with a set only when the prediction is the set "
               "(its allow_set_relation_comp=False default)")
_WORDS = "a spelled-out number: math-verify reads 'five' as the product of the symbols f, i, v, e"
_TOLERANCE = ("within the relative tolerance 1e-4 that VAR-MATH's reference grader uses (and robusteval by "
              "default); math-verify rounds to 6 decimal places, so a 4-6 digit approximation fails")
KNOWN_DISAGREEMENTS: dict[tuple[str, str], tuple[bool, str]] = {
    ("2 \\le x \\le 5", "[2,5]"): (True, _INEQUALITY),
    ("x \\ge 2", "[2, \\infty)"): (True, _INEQUALITY),
    ("five", "5"): (True, _WORDS),
    ("twenty-one", "21"): (True, _WORDS),
    ("one hundred and five", "105"): (True, _WORDS),
    ("\\sqrt{12}", "3.4641"): (True, _TOLERANCE),
    ("2\\pi", "6.2832"): (True, _TOLERANCE),
    ("\\pi", "3.14159"): (True, _TOLERANCE),
}


def _verdicts() -> list[tuple[str, str, Verdict, Verdict]]:
    return [(p, g, grade_answer(p, g, "math"), grade_answer(p, g, "math", grader="math-verify", timeout=10))
            for p, g in STRESS]


@needs_math_verify
def test_builtin_agrees_with_math_verify_except_known_disagreements() -> None:
    assert len(STRESS) >= 40 and len(set(STRESS)) == len(STRESS)
    assert set(KNOWN_DISAGREEMENTS) <= set(STRESS)
    verdicts = _verdicts()
    unexpected = []
    for predicted, gold, builtin, math_verify in verdicts:
        assert builtin.grader == "builtin" and math_verify.grader == "math-verify"
        assert math_verify.note is None, (predicted, gold, math_verify.note)  # decided, not timed out
        known = KNOWN_DISAGREEMENTS.get((predicted, gold))
        if known is None:
            if builtin.correct != math_verify.correct:
                unexpected.append((predicted, gold, builtin.correct, math_verify.correct))
        elif (builtin.correct, math_verify.correct) != (known[0], not known[0]):
            unexpected.append((predicted, gold, builtin.correct, math_verify.correct, "listed as known"))
    assert not unexpected
    agreeing = sum(b.correct == m.correct for _, _, b, m in verdicts)
    assert agreeing == len(STRESS) - len(KNOWN_DISAGREEMENTS)
    # The cross-check exercises both verdicts, not one side of every case.
    assert {True, False} <= {m.correct for *_, m in verdicts}


@needs_math_verify
def test_math_verify_decides_number_and_math_answers_only() -> None:
    assert grade_answer("\\frac{1}{2}", "0.5", "number", grader="math-verify") == Verdict(True, "math-verify")
    assert grade_answer("five", "5", "math", grader="math-verify") == Verdict(False, "math-verify")
    assert grade_answer("five", "5", "math") == Verdict(True, "builtin")
    # Yes/no, text and label answers are not math: the builtin rules decide, and say so.
    assert grade_answer("Yes.", "yes", "yesno", grader="math-verify") == Verdict(True, "builtin")
    assert grade_answer("(B)", "b", "label", grader="math-verify") == Verdict(True, "builtin")
    assert grade_answer(None, "5", "math", grader="math-verify") == Verdict(False, "math-verify")
    assert Verdict(True, "math-verify").detail() == {"grader": "math-verify"}
    assert Verdict(False, "math-verify", "timeout").detail() == {"grader": "math-verify", "grader_note": "timeout"}


@needs_math_verify
def test_math_verify_is_bounded_by_our_worker_not_its_signals() -> None:
    # math-verify's own timeouts are off; a runaway comparison is killed by the worker pool.
    start = time.monotonic()
    verdict = grade_answer("2^{10^{10}}", "3", "math", grader="math-verify", timeout=1.0)
    assert verdict == Verdict(False, "math-verify", "timeout")
    assert time.monotonic() - start < 10
    # The pool replaced the killed worker: the next comparison works.
    assert grade_answer("2^{10}", "1024", "math", grader="math-verify").correct


@needs_math_verify
def test_math_verify_works_off_the_main_thread() -> None:
    # With its signal-based timeouts on, math-verify raises ValueError outside the main thread.
    results: list[Verdict] = []
    thread = threading.Thread(target=lambda: results.append(
        grade_answer("\\sqrt{8}", "2\\sqrt{2}", "math", grader="math-verify")))
    thread.start()
    thread.join(60)
    assert results == [Verdict(True, "math-verify")]


def test_unknown_grader_is_refused() -> None:
    with pytest.raises(UserError, match=r"unknown grader 'sympy' \(known: builtin, math-verify\)"):
        check_math_grader("sympy")
    for answer_type in ("math", "yesno"):
        with pytest.raises(UserError, match="unknown grader"):
            grade_answer("1", "1", answer_type, grader="sympy")
    check_math_grader("builtin")


def test_worker_preload_imports_once_and_reports_a_missing_module() -> None:
    status, message = run_with_timeout(len, ((1, 2),), 5, preload=("robusteval_no_such_module",))
    assert status == "err" and "robusteval_no_such_module" in message
    assert run_with_timeout(len, ((1, 2),), 5, preload=("json",)) == ("ok", 2)
    assert run_with_timeout(len, ((1, 2, 3),), 5, preload=("json",)) == ("ok", 3)
