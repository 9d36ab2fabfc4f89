"""Reading a MATCHA summary's counting, flags, unjudged examples and denominators (issue 26) the same way on
every surface that shows one: the attack's terminal table, ``runs show|compare``, ``results_frame``, the HTML
report, the LaTeX export and the study leaderboard.

The headline UR/SR/WR are over every attacked example (``n_attacked``; a transfer run's over
``n_original_correct``), split into categories whose counts sum to it (:func:`categories`: answer changed,
reasoning judged wrong, judged correct, unjudged, and under our counting clean reasoning already judged wrong;
:mod:`robusteval.metrics.matcha`). Such summaries say so in ``rates_over``. The rates among the judged answers
only are the secondary view ``among_judged`` (:func:`among_judged`), always labelled as such.

Every key is optional, so runs made before read as they always did, and say what they are: no ``counting``
means ``"ours"``, no ``flags`` means none, no ``denominators`` means one. A summary without ``rates_over`` has
its top-level ``ur``/``sr``/``wr``/``ci95`` over ``n_rated`` (attacked, judged, clean reasoning not rejected):
:func:`rates_over` names that denominator ``n_rated`` so every surface labels it, its categories are the three
judged ones, and where it left attacked examples out (unjudged, clean reasoning judged wrong) a flag says its
rates are over the judged answers only (:func:`derived_flags`). Under the authors' counting ``denominators``
holds both denominators (``"authors"`` and ``"ours"``), each with its n, rates, counts and intervals, and
``headline_denominator`` says which of them the headline is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from robusteval.metrics.flags import FLAG as FLAG  # the shared mark, still importable from here
from robusteval.metrics.matcha import CATEGORIES, RATES_OVER

#: How each denominator is called beside its n.
DENOMINATOR_NAMES = {"authors": "authors'", "ours": "ours"}
RATES = ("ur", "sr", "wr")


def counting(summary: Mapping[str, Any]) -> str:
    """The counting rules the run used: ``"ours"`` (also for runs made before there was a choice) or
    ``"authors"``."""
    return str(summary.get("counting") or "ours")


def flag_texts(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's flags as sentences (``reasoning judged by deterministic checkers only (arith)``), the stored
    ones then those read from its numbers (:func:`derived_flags`)."""
    texts = []
    for flag in summary.get("flags") or ():
        if isinstance(flag, Mapping):
            texts.append(str(flag.get("text") or flag.get("code") or "?"))
        else:
            texts.append(str(flag))
    return (*texts, *derived_flags(summary))


def derived_flags(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """What a reader must see beside the rates that the numbers themselves say: attacked examples the judge left
    undecided (their own category, in no verdict), and a summary made before the headline was over every attacked
    example, whose rates leave them out (WR inflated)."""
    unjudged = _count(summary.get("n_unjudged"))
    cot_wrong = _count(summary.get("n_clean_cot_wrong")) if counting(summary) != "authors" else 0
    total = _count(summary.get("n_original_correct", summary.get("n_attacked")))
    if is_over_attacked(summary):
        return (f"{unjudged} of {total} unjudged (answer kept, the judge gave no verdict: a category of its own)",) \
            if unjudged else ()
    rated = summary.get("n_rated")
    if isinstance(rated, int) and not isinstance(rated, bool) and (unjudged or cot_wrong):
        return (f"rates over the {rated} judged of {total} only (a summary made before every attacked example was "
                "the denominator): WR is inflated",)
    return ()


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def flags_line(summary: Mapping[str, Any]) -> str:
    """Every flag, each after the marker: ``⚑ semantic gate: none (edits unchecked); ⚑ ...`` ("" for none)."""
    return "; ".join(f"{FLAG} {text}" for text in flag_texts(summary))


def headline_denominator(summary: Mapping[str, Any]) -> str:
    """Which denominator the top-level rates use (``"ours"`` for runs with a single one)."""
    return str(summary.get("headline_denominator") or counting(summary))


def denominators(summary: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The run's denominators, the headline's first: ``{}`` for a run with only one (the top-level rates)."""
    found = {name: value for name, value in (summary.get("denominators") or {}).items()
             if isinstance(value, Mapping)}
    headline = headline_denominator(summary)
    return dict(sorted(found.items(), key=lambda item: item[0] != headline))


def other_denominators(summary: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The denominators beside the headline one (under the authors' counting: ``{"ours": {...}}``)."""
    headline = headline_denominator(summary)
    return {name: value for name, value in denominators(summary).items() if name != headline}


def denominator_name(name: str) -> str:
    return DENOMINATOR_NAMES.get(name, name)


def unjudged_text(summary: Mapping[str, Any]) -> str:
    """``3 (no equation to check 2, unreadable verdict after 3 asks 1)``: the attacked examples, answer kept,
    whose reasoning the judge did not decide (out of every rate); "" when the summary does not count them."""
    count = summary.get("n_unjudged")
    if not isinstance(count, int) or isinstance(count, bool):
        return ""
    reasons = summary.get("unjudged_reasons") or {}
    detail = ", ".join(f"{reason} {n}" for reason, n in reasons.items() if n)
    return f"{count} ({detail})" if detail and count else str(count)


def is_over_attacked(summary: Mapping[str, Any]) -> bool:
    """Whether the summary's headline is over every attacked example (made since ``rates_over`` was written)."""
    return bool(summary.get("rates_over"))


def rates_over(summary: Mapping[str, Any]) -> str:
    """The name of the headline's denominator as every surface labels it: ``n_attacked`` (a transfer run's
    ``n_original_correct``), or ``n_rated`` for a summary made before, whose rates are among the judged answers."""
    if summary.get("rates_over"):
        return str(summary["rates_over"])
    if "n_rated" in summary:
        return "n_rated"
    return "n_original_correct" if "n_original_correct" in summary else RATES_OVER


def headline_n(summary: Mapping[str, Any]) -> int | None:
    """The headline UR/SR/WR's n (summaries made before clean-reasoning exclusions: every attacked example)."""
    value = summary.get(rates_over(summary), summary.get("n_attacked"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Category:
    """One category of attacked examples: its rate's key (``wr``, ``unjudged_rate``...), outcome, meaning,
    count, rate and 95% interval (None where the summary does not hold one)."""

    key: str
    kind: str
    label: str
    count: int | None
    rate: float | None
    ci: Any


#: Short names of the categories in one-line texts and column headings.
SHORT = {"wrong": "changed", "success": "broken", "unsuccessful": "intact", "unjudged": "unjudged",
         "clean_cot_wrong": "clean wrong"}


def categories(block: Mapping[str, Any]) -> list[Category]:
    """The categories a summary (or one of its ``denominators`` / ``among_judged``) splits its n into, in the
    order of :data:`robusteval.metrics.matcha.CATEGORIES`: those whose rate it holds (a summary made before
    ``rates_over``: the three judged ones)."""
    counts = block.get("counts") or {}
    ci95 = block.get("ci95") or {}
    return [Category(key, kind, label, counts.get(kind), block.get(key), ci95.get(key))
            for key, kind, label in CATEGORIES if key in block]


def categories_text(block: Mapping[str, Any]) -> str:
    """``changed 14 + broken 0 + intact 0 + unjudged 6 = 20``: the counts of :func:`categories` and their sum
    ("" when the block holds no counts)."""
    found = [c for c in categories(block) if isinstance(c.count, int)]
    if not found:
        return ""
    return " + ".join(f"{SHORT.get(c.kind, c.kind)} {c.count}" for c in found) + f" = {sum(c.count or 0 for c in found)}"


def among_judged(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The secondary view, the rates among the judged answers (``n``, ``ur``/``sr``/``wr``, ``counts``, ``ci95``,
    ``definition``); None for a summary made before it, whose headline is that view."""
    found = summary.get("among_judged")
    return found if isinstance(found, Mapping) else None


#: How surfaces call the secondary view beside its n.
AMONG_JUDGED_NAME = "n_judged"
