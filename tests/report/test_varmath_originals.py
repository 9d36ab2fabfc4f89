"""The original problem of a VAR-MATH template (the report's "original" runs are made of these): an instance
only when the template checks ok, and the reason it does not as a status, not a string to match."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest

from robusteval.variants.checks import check_template, original_assignment, original_instance
from robusteval.variants.template import load_template_file, parse_template

BASE: dict[str, Any] = {"id": "apples", "question": "Tom has {{a}} apples and buys {{b}} more. How many now?",
                        "variables": {"a": {"range": [2, 9]}, "b": {"range": [2, 9]}}, "answer": "a + b",
                        "original": {"a": 3, "b": 4}, "original_answer": 7}
ALIGNED: dict[str, Any] = {**BASE, "variables": {"a": {"values": [3, 5]}, "b": {"values": [4, 6]}}}


def test_the_example_templates_give_their_original_problems() -> None:
    templates = load_template_file(str(resources.files("robusteval.variants") / "example_templates.yaml")).templates
    for template in templates:
        assert check_template(template).status == "ok"
        instance = original_instance(template)
        assert instance is not None and instance.id == template.id
    assert original_instance(parse_template(ALIGNED)).question == "Tom has 3 apples and buys 4 more. How many now?"


@pytest.mark.parametrize(("changes", "status"), [
    ({"original": {"a": 3}}, "unchecked"),  # no original value for b
    ({"variables": ALIGNED["variables"], "original": {}}, "unchecked"),  # none for the aligned lists
    ({"variables": ALIGNED["variables"], "original": {"a": 4, "b": 4}}, "mismatch"),  # not among the rows
])
def test_original_assignment_says_why_as_a_status(changes: dict[str, Any], status: str) -> None:
    template = parse_template({**BASE, **changes})
    _, row, found, why = original_assignment(template)
    assert (row, found) == (None, status) and why
    assert check_template(template).status == status and original_instance(template) is None


def test_no_instance_unless_the_original_answer_is_reproduced() -> None:
    assert original_assignment(parse_template(ALIGNED))[1:3] == (0, "ok")
    wrong = parse_template({**BASE, "original_answer": 8})  # the original values give 7
    assert check_template(wrong).status == "mismatch" and original_instance(wrong) is None
    unanswered = parse_template({key: value for key, value in BASE.items() if key != "original_answer"})
    assert check_template(unanswered).status == "unchecked" and original_instance(unanswered) is None
