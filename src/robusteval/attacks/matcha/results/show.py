"""MATCHA's and transfer's own entries of ``runs show``: the attacked examples by outcome (summing to the rates'
n), and for MATCHA the counting rules and the flags its rates carry (each marked ⚑ in the rates)."""

from __future__ import annotations

from typing import Any

from robusteval.metrics.matcha_summary import FLAG, categories_text, counting, flag_texts, is_over_attacked
from robusteval.runs import Run


def transfer_show(run: Run) -> dict[str, Any]:
    summary = run.summary or {}
    shown: dict[str, Any] = {}
    # Rates over every attacked example leave nothing attacked out: the exclusions are what the secondary view
    # (among the judged answers) leaves out.
    if is_over_attacked(summary):
        shown["exclusions_as"] = "outside_among_judged"
    if categories_text(summary):
        shown["outcomes"] = categories_text(summary)
    return shown


def matcha_show(run: Run) -> dict[str, Any]:
    summary = run.summary or {}
    return {**transfer_show(run), "counting": counting(summary),
            "flags": [f"{FLAG} {text}" for text in flag_texts(summary)]}
