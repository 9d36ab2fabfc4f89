"""MATCHA's and transfer's own entries of ``runs show``: the attacked examples by outcome (summing to the rates'
n), what the run left out, and for MATCHA the counting rules and the flags its rates carry (each marked ⚑ in the
rates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robusteval.metrics.matcha_summary import FLAG, categories_text, counting, flag_texts, is_over_attacked
from robusteval.runs import Run


def transfer_show(run: Run) -> dict[str, Any]:
    summary = run.summary or {}
    shown: dict[str, Any] = {"left_out": left_out(summary)}
    if categories_text(summary):
        shown["outcomes"] = categories_text(summary)
    return shown


def left_out(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What the run left out: why examples were not attacked, its exclusions, and its unjudged examples with
    their reasons. Rates over every attacked example leave nothing attacked out: there the exclusions are what the
    secondary view (among the judged answers) leaves out, named so, and the unjudged count is in the rates."""
    excluded = "outside_among_judged" if is_over_attacked(summary) else "exclusions"
    return {(excluded if k == "exclusions" else k): summary.get(k)
            for k in ("skip_reasons", "exclusions", "n_unjudged", "unjudged_reasons")
            if summary.get(k) is not None and not (k == "n_unjudged" and excluded != "exclusions")}


def matcha_show(run: Run) -> dict[str, Any]:
    summary = run.summary or {}
    return {**transfer_show(run), "counting": counting(summary),
            "flags": [f"{FLAG} {text}" for text in flag_texts(summary)]}
