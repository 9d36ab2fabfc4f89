"""The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from robusteval.judges.arithmetic.equations import check_arithmetic
from robusteval.judges.base import REASONING, BackendLoader, Judge, Verdict, check_items, register_judge


class ArithmeticJudge:
    """The ``arith`` reasoning judge: reasoning is wrong iff the candidate response has a false equation.

    Only the candidate response is checked (the paper's rule); the question and reference are ignored.
    """

    name = "arith"
    task = REASONING
    deterministic = True
    identity: ClassVar[dict[str, Any]] = {"name": "arith", "task": REASONING, "version": 1}

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        check_items(self.task, items)
        verdicts = []
        for item in items:
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
            verdicts.append(Verdict(not bad, self.name, raw, detail))
        return verdicts


@register_judge("arith", summary="deterministic: the reasoning is wrong when it contains a false equation")
def _arith_judge(task: str, spec: str, load: BackendLoader) -> Judge:
    from robusteval.errors import UserError

    if task != REASONING:
        raise UserError("judge 'arith' checks reasoning only; it cannot judge whether two questions mean the same")
    return ArithmeticJudge()
