"""Why examples were not attacked, or attacked but left out of the rates: the report's "not attacked: why"
tables and the example browsers' "not attacked" items.

A summary that counts them itself (``skip_reasons``: reason -> examples not attacked; ``exclusions``: name ->
attacked examples left out of the rates, e.g. ``clean_cot_wrong``) is read as it is. Runs made before summaries
counted them are counted here from their stored per-example records, the same way: MATCHA's ``matcha_outcome``
rows (``skip_reason``, ``attacked``, ``clean_cot_wrong``) and, counted by the method itself (``skipped_of``), the
records of another attack (the word-importance attack's ``status`` ``skipped``: the model already got the original
wrong).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from robusteval.metrics.matcha_summary import (
    categories,
    denominator_name,
    denominators,
    headline_denominator,
    headline_n,
    is_over_attacked,
)
from robusteval.metrics.stats import wilson_interval
from robusteval.report.collect import MATCHA
from robusteval.report.model import Num, Table
from robusteval.runs import Run

#: ``attacks.matcha.pipeline.OUTCOME_STAGE`` (that module imports torch; a test pins the two together).
MATCHA_OUTCOME_STAGE = "matcha_outcome"
#: What each exclusion means, in the words the tables use.
EXCLUSIONS = {"clean_cot_wrong": "attacked, not rated: the judge rejects the clean reasoning too"}
#: ``skipped_of(run)``: a method's count of its stored records' reasons for not attacking (reason -> examples).
SkippedOf = Callable[[Run], Mapping[str, int]]


@dataclass(frozen=True)
class NotAttacked:
    """Counts of the examples a run did not attack (``skipped``, by reason) and of the attacked ones its rates
    leave out (``excluded``, by name); ``source``: ``"summary"`` or ``"records"`` (counted here)."""

    skipped: dict[str, int]
    excluded: dict[str, int]
    source: str

    @property
    def any(self) -> bool:
        return bool(sum(self.skipped.values()) or sum(self.excluded.values()))


def _counts(value: Any) -> dict[str, int] | None:
    """A summary's reason -> count mapping (counts as integers), or None when it is absent or malformed."""
    if not isinstance(value, Mapping):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in value.values()):
        return None
    return {str(k): int(n) for k, n in value.items()}


def matcha_skip_reason(record: Mapping[str, Any]) -> str | None:
    """Why a ``matcha_outcome`` row was not attacked (None when it was)."""
    if record.get("attacked"):
        return None
    return str(record.get("skip_reason") or record.get("skipped") or "not recorded")


#: The attacked examples whose answer was kept but whose reasoning the judge did not decide (out of every rate).
UNJUDGED = "attacked, answer kept, not rated: the reasoning judge abstained"


def unjudged(summary: Mapping[str, Any]) -> dict[str, int]:
    """A MATCHA summary's ``n_unjudged`` by reason (``unjudged_reasons``; the count not given a reason as
    "reason not recorded"); ``{}`` for summaries that do not count them, or count none."""
    count = summary.get("n_unjudged")
    if not isinstance(count, int) or isinstance(count, bool) or not count:
        return {}
    reasons = {k: v for k, v in (_counts(summary.get("unjudged_reasons")) or {}).items() if v}
    rest = count - sum(reasons.values())
    return {**reasons, **({"reason not recorded": rest} if rest > 0 else {})}


def _from_records(run: Run, skipped_of: SkippedOf | None) -> NotAttacked:
    if skipped_of is None:
        rows = run.records(MATCHA_OUTCOME_STAGE) if MATCHA_OUTCOME_STAGE in run.stages else []
        skipped = Counter(reason for row in rows if (reason := matcha_skip_reason(row)) is not None)
        excluded = Counter("clean_cot_wrong" for row in rows if row.get("attacked") and row.get("clean_cot_wrong"))
    else:
        skipped, excluded = Counter(skipped_of(run)), Counter()
    return NotAttacked(dict(skipped.most_common()), dict(excluded.most_common()), "records")


def not_attacked(run: Run, skipped_of: SkippedOf | None = None) -> NotAttacked:
    """Why ``run`` (a MATCHA run, or one of an attack that counts its own records' reasons: ``skipped_of``, the
    word-importance attack's) left examples unattacked or unrated: the summary's own counts where it has them,
    else counted from the stored records."""
    if skipped_of is None and run.command != MATCHA:
        raise ValueError(f"{run.path}: not a MATCHA run, and no count of its records' reasons ({run.command})")
    summary = run.summary or {}
    skipped = _counts(summary.get("skip_reasons"))
    if skipped is not None:
        excluded = _counts(summary.get("exclusions"))
        if excluded is None:  # the MATCHA summary has always counted this one exclusion
            cot_wrong = summary.get("n_clean_cot_wrong")
            excluded = {"clean_cot_wrong": cot_wrong} if isinstance(cot_wrong, int) and cot_wrong else {}
        # Summaries name every exclusion they know, counted or not: a zero is no row of the table.
        ordered = dict(sorted(((k, v) for k, v in skipped.items() if v), key=lambda item: -item[1]))
        return NotAttacked(ordered, {k: v for k, v in excluded.items() if v}, "summary")
    return _from_records(run, skipped_of)


def _share(count: int, total: int | None, run: Run) -> Num:
    """``count`` as a share of the run's questions, with its Wilson interval."""
    if not total:
        return Num(None, n=total, runs=(str(run.path),), percent=True)
    return Num(count / total, n=total, ci=wilson_interval(count, total), runs=(str(run.path),), percent=True,
               note=f"{count} of {total} questions")


def not_attacked_table(run: Run, label: str, found: NotAttacked | None = None) -> Table:
    """The "not attacked: why" table of one MATCHA or word-importance run: each reason with its count and share
    of the run's questions, then the attacked ones (MATCHA: those left out of the rates, and the rated ones),
    so the rows add up to all questions (``found``: :func:`not_attacked` of the run, when already counted)."""
    summary = run.summary or {}
    total = summary.get("n")
    found = found or not_attacked(run)
    rows: list[list[Num | str]] = [[reason, str(count), _share(count, total, run)]
                                   for reason, count in found.skipped.items()]
    over = ""
    if run.command == MATCHA and is_over_attacked(summary):
        # Every attacked question in one category of the headline (the unjudged by reason): the rows add up.
        which = denominator_name(headline_denominator(summary)) + " " if denominators(summary) else ""
        for category in categories(summary):
            if category.kind == "unjudged" and unjudged(summary):
                rows += [[f"attacked, {category.label}: {reason}", str(count), _share(count, total, run)]
                         for reason, count in unjudged(summary).items()]
            elif isinstance(category.count, int):
                rows.append([f"attacked, {category.label}", str(category.count), _share(category.count, total, run)])
        over = f" The attacked rows ({which}n_attacked = {headline_n(summary)}) are the UR, SR and WR denominator."
    elif run.command == MATCHA:
        # The unjudged exclusion is given by reason in the next rows (summaries count it in both places).
        rows += [[EXCLUSIONS.get(name, f"attacked, not rated: {name}"), str(count), _share(count, total, run)]
                 for name, count in found.excluded.items() if name != "unjudged" or not unjudged(summary)]
        rows += [[f"{UNJUDGED}: {reason}", str(count), _share(count, total, run)]
                 for reason, count in unjudged(summary).items()]
        rated = summary.get("n_rated", summary.get("n_attacked"))
        if isinstance(rated, int):
            which = denominator_name(headline_denominator(summary)) + " " if denominators(summary) else ""
            rows.append([f"attacked and rated (the {which}UR, SR and WR denominator n_rated, a run made before "
                         "every attacked question was)", str(rated),
                         _share(rated, total, run)])
    else:
        attacked = summary.get("n_attacked")
        if isinstance(attacked, int):
            rows.append(["attacked", str(attacked), _share(attacked, total, run)])
    where = ("the run's summary" if found.source == "summary" else
             "the run's stored records (its summary predates these counts)")
    return Table(f"Not attacked: why ({label}; {total} questions)", ["Why", "questions", "% of all questions"], rows,
                 note=f"Counted from {where}.{over}")
