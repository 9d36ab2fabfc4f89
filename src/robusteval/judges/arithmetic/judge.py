"""The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation."""

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

    Only the candidate response is checked (the paper's rule); the question and reference are ignored.
    """

    name = "arith"

    def verdict(self, item: ReasoningItem) -> Verdict:
        report = check_arithmetic(item.candidate)
        bad = report.false
        raw = (
            f"{len(report.equations)} equation(s) checked, {len(bad)} false"
            + (": " + "; ".join(e.text for e in bad) if bad else "")
        )
        detail = {
            "method": "arithmetic",
            "n_equations": len(report.equations),
            "false_equations": [e.to_record() for e in bad],
        }
        return Verdict(not bad, self.name, raw, detail)


_arith_judge = register_judge("arith", summary="deterministic: the reasoning is wrong when it contains a false "
                              "equation")(reasoning_only(ArithmeticJudge))
