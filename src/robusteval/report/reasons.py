"""Why examples were not attacked, or attacked but left out of the rates: the report's "not attacked: why"
tables and the example browsers' "not attacked" items.

A summary that counts them itself (``skip_reasons``: reason -> examples not attacked; ``exclusions``: name ->
attacked examples left out of the rates, e.g. MATCHA's clean reasonings judged wrong) is read as it is. Runs made before summaries
counted them are counted here from their stored per-example records, the same way: each method gives its own
count of its records (``records``) and its own rows of the attacked examples (``attacked``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from robusteval.metrics.stats import wilson_interval
from robusteval.report.model import Num, Table
from robusteval.runs import Run


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


#: ``rows(run, found) -> (rows, note)``: a method's rows of its attacked examples under the "not attacked: why"
#: table's reasons (so the rows add up to all questions) and what the table's note adds about them.
AttackedRows = Callable[[Run, "NotAttacked"], tuple[list[list[Num | str]], str]]


def counts(value: Any) -> dict[str, int] | None:
    """A summary's reason -> count mapping (counts as integers), or None when it is absent or malformed."""
    if not isinstance(value, Mapping):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in value.values()):
        return None
    return {str(k): int(n) for k, n in value.items()}


def not_attacked(run: Run, records: Callable[[Run], NotAttacked],
                 unnamed: Callable[[Mapping[str, Any]], dict[str, int]] | None = None) -> NotAttacked:
    """Why ``run`` left examples unattacked or unrated: the summary's own counts where it has them, else its
    method's count of its stored records (``records``). ``unnamed(summary)``: the method's exclusions of a summary
    that counts its skips but names no ``exclusions`` (one made before; none without it)."""
    summary = run.summary or {}
    skipped = counts(summary.get("skip_reasons"))
    if skipped is not None:
        excluded = counts(summary.get("exclusions"))
        if excluded is None:
            excluded = unnamed(summary) if unnamed is not None else {}
        # Summaries name every exclusion they know, counted or not: a zero is no row of the table.
        ordered = dict(sorted(((k, v) for k, v in skipped.items() if v), key=lambda item: -item[1]))
        return NotAttacked(ordered, {k: v for k, v in excluded.items() if v}, "summary")
    return records(run)


def question_share(count: int, total: int | None, run: Run) -> Num:
    """``count`` as a share of the run's questions, with its Wilson interval."""
    if not total:
        return Num(None, n=total, runs=(str(run.path),), percent=True)
    return Num(count / total, n=total, ci=wilson_interval(count, total), runs=(str(run.path),), percent=True,
               note=f"{count} of {total} questions")


def not_attacked_table(run: Run, label: str, found: NotAttacked, *, attacked: AttackedRows | None = None) -> Table:
    """The "not attacked: why" table of one attack run: each reason with its count and share of the run's
    questions, then the attacked ones (``attacked``: the method's own rows of them, e.g. MATCHA's by category; by
    default one row), so the rows add up to all questions (``found``: :func:`not_attacked` of the run)."""
    summary = run.summary or {}
    total = summary.get("n")
    rows: list[list[Num | str]] = [[reason, str(count), question_share(count, total, run)]
                                   for reason, count in found.skipped.items()]
    over = ""
    if attacked is not None:
        more, over = attacked(run, found)
        rows += more
    else:
        n_attacked = summary.get("n_attacked")
        if isinstance(n_attacked, int):
            rows.append(["attacked", str(n_attacked), question_share(n_attacked, total, run)])
    where = ("the run's summary" if found.source == "summary" else
             "the run's stored records (its summary predates these counts)")
    return Table(f"Not attacked: why ({label}; {total} questions)", ["Why", "questions", "% of all questions"], rows,
                 note=f"Counted from {where}.{over}")
