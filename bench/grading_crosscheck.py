"""Answer grading cross-checked: robusteval's builtin grader against Hugging Face math-verify.

Two sets, each graded by both graders through the VAR-MATH pipeline's own function
(``robusteval.variants.grading.grade_prediction``: extraction, then the grader):

* ``stress``: the hand-written stress cases of tests/data/test_math_verify.py (answers as extracted);
* ``var-math``: every instance of the published VAR-AMC23 and VAR-AIME24 files (309 gold answers) with
  completions written the ways models write them: the gold boxed, as a float ("18.0"), as an equal fraction,
  after "The answer is", with a unit, spelled out (integers below 10,000), and two wrong answers (gold + 1,
  gold x 10, for a non-zero gold).

Prints the agreement per set and per form, every disagreement form with an example, and the time per
verdict of each grader (math-verify in robusteval's worker pool, its own timeouts off). Needs the
math-verify extra and ../shared/data/var-math.

    python bench/grading_crosscheck.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from robusteval.data.answers import grade_answer
from robusteval.variants.grading import gold_text, grade_prediction

_CANDIDATES = (Path(__file__).resolve().parents[1].parent / "shared" / "data", Path("/work/shared/data"))
SHARED = next((c for c in _CANDIDATES if c.is_dir()), _CANDIDATES[0])
TESTS = Path(__file__).resolve().parents[1] / "tests"
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spelled(n: int) -> str:
    """English words for 0 <= n < 10,000 ("one hundred and five")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    if n < 1000:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + (f" and {spelled(rest)}" if rest else "")
    rest = n % 1000
    joiner = " and " if 0 < rest < 100 else " "
    return f"{spelled(n // 1000)} thousand" + (f"{joiner}{spelled(rest)}" if rest else "")


def var_math_cases() -> list[tuple[str, str, str, bool]]:
    """(form, completion, gold, gold is right) for every published VAR-MATH instance."""
    cases = []
    for name in ("VAR_amc23_test.jsonl", "VAR_aime24_test.jsonl"):
        for line in (SHARED / "var-math" / "instances" / name).read_text(encoding="utf-8").splitlines():
            value = json.loads(line)["answer"]
            gold = gold_text(value)
            integral = float(value).is_integer()
            cases += [
                ("boxed", f"So the answer is \\boxed{{{gold}}}.", gold, True),
                ("float", f"\\boxed{{{float(value)}}}", gold, True),
                ("phrase", f"Adding up, the answer is {gold}.", gold, True),
                ("fraction", f"\\boxed{{\\frac{{{gold_text(value * 4)}}}{{4}}}}", gold, True),
                ("unit", f"\\boxed{{{gold} \\text{{ units}}}}", gold, True),
                ("plus-one", f"\\boxed{{{gold_text(value + 1)}}}", gold, False),
            ]
            if value:  # 0 x 10 is still the gold answer
                cases.append(("times-ten", f"\\boxed{{{gold_text(value * 10)}}}", gold, False))
            if integral and 0 <= value < 10_000:
                cases.append(("spelled", f"The answer is {spelled(int(value))}.", gold, True))
    return cases


def stress_cases() -> list[tuple[str, str, str, bool | None]]:
    sys.path.insert(0, str(TESTS))
    from data.test_math_verify import STRESS  # the test's list, so the two never drift apart

    return [("stress", predicted, gold, None) for predicted, gold in STRESS]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per comparison (VAR-MATH's 3)")
    args = parser.parse_args()
    grade_answer("1", "1", "math", grader="math-verify")  # start a worker before timing
    for label, cases in (("stress", stress_cases()), ("var-math", var_math_cases())):
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        right: dict[str, Counter[str]] = defaultdict(Counter)
        examples: dict[str, tuple[str, str, bool, bool]] = {}
        seconds: Counter[str] = Counter()
        for form, text, gold, expected in cases:
            verdicts = {}
            for grader in ("builtin", "math-verify"):
                start = time.perf_counter()
                if label == "stress":  # already extracted answers
                    verdicts[grader] = grade_answer(text, gold, "math", grader=grader, timeout=args.timeout).correct
                else:
                    verdicts[grader] = grade_prediction(text, gold, timeout=args.timeout, math_grader=grader).correct
                seconds[grader] += time.perf_counter() - start
                right[form][grader] += expected is not None and verdicts[grader] == expected
            total[form] += 1
            same = verdicts["builtin"] == verdicts["math-verify"]
            agree[form] += same
            if not same:
                examples.setdefault(form, (text, gold, verdicts["builtin"], verdicts["math-verify"]))
        n = sum(total.values())
        print(f"\n== {label}: builtin and math-verify agree on {sum(agree.values())} of {n} verdicts")
        print("form        n  agree  builtin right  math-verify right")
        for form in total:
            checked = form != "stress"
            b = right[form]["builtin"] if checked else "-"
            m = right[form]["math-verify"] if checked else "-"
            print(f"{form:10} {total[form]:3}  {agree[form]:5}  {b!s:>13}  {m!s:>17}")
        for form, (text, gold, b, m) in examples.items():
            print(f"  e.g. {form}: {text!r} vs gold {gold!r}: builtin {b}, math-verify {m}")
        print(f"ms per verdict: builtin {1000 * seconds['builtin'] / n:.1f}, "
              f"math-verify {1000 * seconds['math-verify'] / n:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
