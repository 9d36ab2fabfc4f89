"""Why a MATCHA run left questions unattacked, or attacked but out of its rates: its "not attacked: why" table.

The generic table and the summary's own counts are :mod:`robusteval.report.reasons`'s; what is MATCHA's is how
a run made before summaries counted them is counted from its ``matcha_outcome`` rows (``skip_reason``,
``attacked``, ``clean_cot_wrong``), and its rows of the attacked questions (by category, the unjudged ones by
reason), which add up to the headline denominator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from robusteval.attacks.matcha.results.commands import OUTCOME_STAGE
from robusteval.metrics.matcha_summary import (
    categories,
    denominator_name,
    denominators,
    headline_denominator,
    headline_n,
    is_over_attacked,
)
from robusteval.report.model import Num, Table
from robusteval.report.reasons import NotAttacked, counts, question_share
from robusteval.report.reasons import not_attacked as counted
from robusteval.report.reasons import not_attacked_table as reasons_table
from robusteval.runs import Run

#: What each exclusion means, in the words the tables use.
EXCLUSIONS = {"clean_cot_wrong": "attacked, not rated: the judge rejects the clean reasoning too"}
#: The attacked examples whose answer was kept but whose reasoning the judge did not decide (out of every rate).
UNJUDGED = "attacked, answer kept, not rated: the reasoning judge abstained"


def matcha_skip_reason(record: Mapping[str, Any]) -> str | None:
    """Why a ``matcha_outcome`` row was not attacked (None when it was)."""
    if record.get("attacked"):
        return None
    return str(record.get("skip_reason") or record.get("skipped") or "not recorded")


def unjudged(summary: Mapping[str, Any]) -> dict[str, int]:
    """A MATCHA summary's ``n_unjudged`` by reason (``unjudged_reasons``; the count not given a reason as
    "reason not recorded"); ``{}`` for summaries that do not count them, or count none."""
    count = summary.get("n_unjudged")
    if not isinstance(count, int) or isinstance(count, bool) or not count:
        return {}
    reasons = {k: v for k, v in (counts(summary.get("unjudged_reasons")) or {}).items() if v}
    rest = count - sum(reasons.values())
    return {**reasons, **({"reason not recorded": rest} if rest > 0 else {})}


def _from_records(run: Run) -> NotAttacked:
    rows = run.records(OUTCOME_STAGE) if OUTCOME_STAGE in run.stages else []
    skipped = Counter(reason for row in rows if (reason := matcha_skip_reason(row)) is not None)
    excluded = Counter("clean_cot_wrong" for row in rows if row.get("attacked") and row.get("clean_cot_wrong"))
    return NotAttacked(dict(skipped.most_common()), dict(excluded.most_common()), "records")


def not_attacked(run: Run) -> NotAttacked:
    """Why a MATCHA run left questions unattacked or unrated: its summary's counts, else counted from its rows."""
    return counted(run, _from_records, _unnamed)


def _unnamed(summary: Mapping[str, Any]) -> dict[str, int]:
    """The exclusions of a summary made before they were named: it has always counted this one."""
    cot_wrong = summary.get("n_clean_cot_wrong")
    return {"clean_cot_wrong": cot_wrong} if isinstance(cot_wrong, int) and cot_wrong else {}


def _attacked_rows(run: Run, found: NotAttacked) -> tuple[list[list[Num | str]], str]:
    """The attacked questions' rows: by category of the headline (the unjudged by reason) when the rates are over
    every attacked question; a run made before: those left out of the rates, then the rated ones."""
    summary = run.summary or {}
    total = summary.get("n")
    rows: list[list[Num | str]] = []
    over = ""
    which = denominator_name(headline_denominator(summary)) + " " if denominators(summary) else ""
    if is_over_attacked(summary):
        # Every attacked question in one category of the headline (the unjudged by reason): the rows add up.
        for category in categories(summary):
            if category.kind == "unjudged" and unjudged(summary):
                rows += [[f"attacked, {category.label}: {reason}", str(count), question_share(count, total, run)]
                         for reason, count in unjudged(summary).items()]
            elif isinstance(category.count, int):
                rows.append([f"attacked, {category.label}", str(category.count),
                             question_share(category.count, total, run)])
        over = f" The attacked rows ({which}n_attacked = {headline_n(summary)}) are the UR, SR and WR denominator."
        return rows, over
    # The unjudged exclusion is given by reason in the next rows (summaries count it in both places).
    rows += [[EXCLUSIONS.get(name, f"attacked, not rated: {name}"), str(count), question_share(count, total, run)]
             for name, count in found.excluded.items() if name != "unjudged" or not unjudged(summary)]
    rows += [[f"{UNJUDGED}: {reason}", str(count), question_share(count, total, run)]
             for reason, count in unjudged(summary).items()]
    rated = summary.get("n_rated", summary.get("n_attacked"))
    if isinstance(rated, int):
        rows.append([f"attacked and rated (the {which}UR, SR and WR denominator n_rated, a run made before "
                     "every attacked question was)", str(rated), question_share(rated, total, run)])
    return rows, over


def not_attacked_table(run: Run, label: str) -> Table:
    """The "not attacked: why" table of one MATCHA run: each reason with its count and share of the run's
    questions, then the attacked ones, so the rows add up to all questions."""
    return reasons_table(run, label, not_attacked(run), attacked=_attacked_rows)
