"""A judge factory gets the settings it declares it takes, and only those: nothing is read from its signature."""

from __future__ import annotations

from typing import Any

import pytest

from robusteval.judges.base import JUDGES, SEMANTIC, Verdict, build_judge, register_judge


class Recorder:
    name = "recorder"
    task = SEMANTIC
    deterministic = True

    def __init__(self, given: dict[str, Any]) -> None:
        self.given = given

    def judge(self, items: Any) -> list[Verdict]:
        return [Verdict(True, self.name, "") for _ in items]


def test_declared_options_reach_the_factory_and_undeclared_do_not() -> None:
    with JUDGES.scoped():
        register_judge("takes-chat", options=("chat", "retries"))(lambda task, atom, load, **kw: Recorder(kw))
        register_judge("takes-none")(lambda task, atom, load, **kw: Recorder(kw))  # **kw, yet declares none
        chatty = build_judge("takes-chat", lambda spec: None, task=SEMANTIC, chat=True, retries=2)
        quiet = build_judge("takes-none", lambda spec: None, task=SEMANTIC, chat=True, retries=2)
    assert chatty.given == {"chat": True, "retries": 2}  # type: ignore[attr-defined]
    assert quiet.given == {}  # type: ignore[attr-defined]


def test_an_unknown_option_is_refused_at_registration() -> None:
    with JUDGES.scoped(), pytest.raises(ValueError, match="unknown options chatty"):
        register_judge("typo", options=("chatty",))
