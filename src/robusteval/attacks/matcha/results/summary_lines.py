"""What a MATCHA or transfer summary left out, and its flags, as the lines under a run's table (the attack's and
the transfer's terminal output, the quickstart): :attr:`MethodResults.left_out
<robusteval.report.method_results.MethodResults.left_out_lines>` and its ``exclusion_texts`` / ``flag_texts``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robusteval.metrics.matcha import EXCLUSION_DEFINITIONS
from robusteval.metrics.matcha_summary import counting, is_over_attacked, unjudged_text
from robusteval.report.tables import left_out_line

#: How MATCHA's exclusions read in a sentence.
MATCHA_EXCLUSIONS = {"clean_cot_wrong": "clean reasoning already judged wrong"}
#: How a transfer's exclusions read in a sentence.
TRANSFER_EXCLUSIONS = {"original_wrong": "original question answered wrongly"}


def left_out_lines(summary: Mapping[str, Any]) -> list[str] | None:
    """The lines saying what ``summary`` left out: over every attacked example, what its secondary view (among
    the judged answers) leaves out, each a category of its own in the headline; before that, its unjudged
    examples beside the generic line. None for a summary that counts no unjudged example (the generic line)."""
    excluded = {name: count for name, count in (summary.get("exclusions") or {}).items() if count}
    unjudged = unjudged_text(summary)
    if not is_over_attacked(summary):
        if not (unjudged and summary.get("n_unjudged")):
            return None
        return [*([left_out_line(excluded)] if excluded else []),
                f"left out of every rate, answer kept but the reasoning judge abstained: {unjudged}"]
    lines = []
    others = {name: count for name, count in excluded.items() if name not in EXCLUSION_DEFINITIONS}
    if others:
        lines.append(left_out_line(others))
    if unjudged and summary.get("n_unjudged"):
        lines.append("unjudged, answer kept but the reasoning judge abstained (a category of its own, in no "
                     f"verdict): {unjudged}")
    cot_wrong = excluded.get("clean_cot_wrong")
    if cot_wrong and counting(summary) != "authors":
        lines.append(f"clean reasoning already judged wrong, answer kept (a category of its own): {cot_wrong}")
    elif cot_wrong:
        lines.append(f"clean reasoning already judged wrong, answer kept: {cot_wrong} (in the authors' headline by "
                     "their verdict; in our denominator a category of its own)")
    if excluded.get("no_cot"):
        lines.append(f"outside our denominator, in the authors': {excluded['no_cot']} (no reasoning after the clean "
                     "answer: our counting does not attack such an answer)")
    return lines
