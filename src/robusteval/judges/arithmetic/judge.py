"""The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation; with no
equation to check it abstains."""

from __future__ import annotations

from robusteval.judges.arithmetic.equations import check_arithmetic
from robusteval.judges.base import (
    DeterministicReasoningJudge,
    ReasoningItem,
    Verdict,
    reasoning_only,
    register_judge,
)


class ArithmeticJudge(DeterministicReasoningJudge):
    """The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation.

    Only the candidate response is checked (the paper's rule); the question and reference are ignored. Label:
    False with a false equation, True when at least one equation was checked and all are true, None (abstains,
    "no equation to check") when the candidate has no equation it can check: prose says nothing about
    arithmetic.
    """

    name = "arith"
    version = 2  # 2: abstains on a candidate with no equation (1 called it correct)

    def verdict(self, item: ReasoningItem) -> Verdict:
        report = check_arithmetic(item.candidate)
        bad = report.false
        detail = {
            "method": "arithmetic",
            "n_equations": len(report.equations),
            "false_equations": [e.to_record() for e in bad],
        }
        if not report.equations:
            return Verdict.abstain(self.name, "0 equation(s) checked: abstains", NO_EQUATION, detail)
        raw = (
            f"{len(report.equations)} equation(s) checked, {len(bad)} false"
            + (": " + "; ".join(e.text for e in bad) if bad else "")
        )
        return Verdict(not bad, self.name, raw, detail)


NO_EQUATION = "no equation to check"

_arith_judge = register_judge("arith", summary="deterministic: the reasoning is wrong when it contains a false "
                              "equation")(reasoning_only(ArithmeticJudge))
