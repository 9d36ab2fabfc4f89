"""Reading a MATCHA summary's counting, flags, unjudged examples and denominators (issue 26) the same way on
every surface that shows one: the attack's terminal table, ``runs show|compare``, ``results_frame``, the HTML
report and the study leaderboard.

Every key is optional, so runs made before it read as they always did: no ``counting`` means ``"ours"``, no
``flags`` means none, no ``denominators`` means one (the top-level rates over ``n_rated``). The top-level
``ur``/``sr``/``wr``/``n_rated``/``ci95`` are the headline numbers; under the authors' counting
``denominators`` holds both denominators (``"authors"`` and ``"ours"``), each with its n, rates, counts and
intervals, and ``headline_denominator`` says which of them the headline is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The marker of a rate whose reasoning judge or semantic gate makes it weaker than it looks.
FLAG = "⚑"
#: How each denominator is called beside its n.
DENOMINATOR_NAMES = {"authors": "authors'", "ours": "ours"}
RATES = ("ur", "sr", "wr")


def counting(summary: Mapping[str, Any]) -> str:
    """The counting rules the run used: ``"ours"`` (also for runs made before there was a choice) or
    ``"authors"``."""
    return str(summary.get("counting") or "ours")


def flag_texts(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's flags as sentences (``reasoning judged by deterministic checkers only (arith)``)."""
    texts = []
    for flag in summary.get("flags") or ():
        if isinstance(flag, Mapping):
            texts.append(str(flag.get("text") or flag.get("code") or "?"))
        else:
            texts.append(str(flag))
    return tuple(texts)


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
