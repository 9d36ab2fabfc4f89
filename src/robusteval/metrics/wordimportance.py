"""Figures of the word-importance attack (pure functions over its records): per-rate outcomes of one example,
and the TextAttack-style table per perturbation rate α.

All α rates come from one run at the largest α: the attack is deterministic and a run at a smaller α is a
prefix of it, stopping once its word allowance is used, so each rate's outcome is read off that run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any


def rate_key(rate: float) -> str:
    """How a rate names its entries in records and summaries: ``0.1`` -> ``"0.1"``."""
    return f"{rate:g}"


def word_allowance(rate: float, n_words: int) -> int:
    """Words a run at ``rate`` may perturb: floor(α · words), robust to 0.1 · 30 = 2.9999…"""
    return math.floor(rate * n_words + 1e-9)


def per_rate_outcomes(rates: Sequence[float], *, n_words: int, n_perturbed: int, success: bool,
                      accept_queries: Sequence[int], queries: int) -> dict[str, dict[str, Any]]:
    """Each rate's outcome from the run at the largest rate.

    ``accept_queries[m]`` is the query count when the m-th word had been perturbed (``accept_queries[0]``: the
    ranking done); ``queries`` is the run's total. A smaller rate succeeds when the run succeeded within its
    allowance; otherwise it stopped when its allowance was used, having spent the queries counted then.
    """
    out = {}
    for rate in sorted(rates):
        limit = word_allowance(rate, n_words)
        ok = success and n_perturbed <= limit
        spent = queries if ok or limit >= len(accept_queries) else accept_queries[limit]
        out[rate_key(rate)] = {"success": ok, "queries": spent,
                               "perturbed_words": n_perturbed if ok else min(n_perturbed, limit)}
    return out


#: Why an example is not attacked when its record names no reason (the only one the search has).
ORIGINAL_WRONG = "the model's label on the original is wrong"


def attack_summary(records: Sequence[Mapping[str, Any]], rates: Sequence[float]) -> dict[str, Any]:
    """The TextAttack-style table per α: successes, failures, skips, accuracies, perturbed %, queries; and why
    examples were skipped (``skip_reasons``: reason -> count; ``exclusions``: nothing else is left out)."""
    n = len(records)
    skipped = [r for r in records if r["status"] == "skipped"]
    attacked = [r for r in records if r["status"] != "skipped"]
    by_rate: dict[str, Any] = {}
    for rate in sorted(rates):
        key = rate_key(rate)
        wins = [r for r in attacked if r["per_rate"][key]["success"]]
        by_rate[key] = {
            "n_success": len(wins),
            "n_failed": len(attacked) - len(wins),
            "n_skipped": len(skipped),
            "original_accuracy": len(attacked) / n if n else None,
            "accuracy_under_attack": (len(attacked) - len(wins)) / n if n else None,
            "attack_success_rate": len(wins) / len(attacked) if attacked else None,
            "avg_perturbed_word_pct": _percent(_mean([r["per_rate"][key]["perturbed_words"] / r["n_words"]
                                                      for r in wins if r["n_words"]])),
            "avg_words_per_input": _mean([r["n_words"] for r in attacked]),
            "avg_queries": _mean([r["per_rate"][key]["queries"] for r in attacked]),
            "avg_queries_per_success": _mean([r["per_rate"][key]["queries"] for r in wins]),
        }
    reasons = Counter(str(r.get("skip_reason") or ORIGINAL_WRONG) for r in skipped)
    return {"n": n, "n_attacked": len(attacked), "n_skipped": len(skipped), "by_rate": by_rate,
            "asr_by_rate": {k: v["attack_success_rate"] for k, v in by_rate.items()},
            "skip_reasons": dict(reasons.most_common()), "exclusions": {}}


def _percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
