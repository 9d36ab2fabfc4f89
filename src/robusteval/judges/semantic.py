"""Semantic-equivalence judges: does the perturbed question mean the same as the original?

* :class:`SemanticJudge`: an LLM (any backend) asked with ``prompts/semantic.txt``; verdict read from its own
  output only (see :mod:`robusteval.judges.llm`).
* :class:`AlwaysSameMeaning` (spec ``none``): accepts every edit without looking; its name says so, so no
  summary can pass it off as a real check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from robusteval.errors import UserError
from robusteval.judges.base import SEMANTIC, BackendLoader, Judge, Verdict, check_items, register_judge
from robusteval.judges.llm import BinaryLLMJudge


class SemanticJudge(BinaryLLMJudge):
    """``label`` True = same meaning. Items: :class:`~robusteval.judges.base.SemanticItem`."""

    task = SEMANTIC
    prompt_name = "semantic"


class AlwaysSameMeaning:
    """The ``none`` semantic judge: every perturbed question is declared to keep its meaning."""

    name = "none(always-same-meaning)"
    task = SEMANTIC
    deterministic = True
    identity: ClassVar[dict[str, Any]] = {"name": name, "task": SEMANTIC}

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        check_items(self.task, items)
        return [Verdict(True, self.name, "", {"method": "none"}) for _ in items]


@register_judge("none", summary="semantic judge that accepts every perturbation (no gating)")
def _none_judge(task: str, spec: str, load: BackendLoader) -> Judge:
    if task != SEMANTIC:
        raise UserError("judge 'none' is only a semantic judge (no semantic gate); give a reasoning judge")
    return AlwaysSameMeaning()
