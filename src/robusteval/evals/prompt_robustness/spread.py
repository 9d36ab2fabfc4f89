"""The spread of accuracy over a set of equivalent prompts asked the same questions (FormatSpread, Sclar et al.
2023; Mizrahi et al. 2024): per prompt accuracy, and over the set min, max, mean, spread and the worst case.

* accuracy per prompt: n (questions) and its Wilson interval;
* ``min``, ``max``, ``mean`` of the prompts' accuracies, and which prompt gives the min and the max, each with a
  paired percentile bootstrap interval over questions (``*_ci95``; where it collapses, the Wilson interval of the
  prompt that gives it, or of the mean);
* ``spread = max - min``, with a paired percentile bootstrap interval over questions (each resample draws the
  same questions for every prompt and takes max - min of the resampled accuracies), falling back to Newcombe's
  paired interval of the observed best and worst prompts' difference where the bootstrap collapses to a point
  (never a zero-width interval; ``spread_ci95_method`` names which);
* the worst-case accuracy: a question counts correct only if every prompt answers it correctly (the share of
  questions robust to the choice of prompt), with its Wilson interval; it is never above the min accuracy. The
  best case (some prompt answers it correctly) is its mirror.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robusteval.metrics.stats import paired_difference_interval, proportion, robust_interval, wilson_interval

#: What ``spread_ci95_method`` names when the bootstrap collapsed.
SPREAD_FALLBACK = "newcombe-paired (best vs worst prompt)"


def spread_metrics(correct: Mapping[str, Sequence[bool]], *, seed: int, n_resamples: int) -> dict[str, Any]:
    """The set's statistics from ``correct`` (prompt name -> correct per question, every prompt the same
    questions in the same order)."""
    names = list(correct)
    if not names:
        raise ValueError("a spread needs at least one prompt")
    table = np.array([[bool(v) for v in correct[name]] for name in names], dtype=float).T  # questions x prompts
    n = table.shape[0]
    if any(len(correct[name]) != n for name in names):
        raise ValueError("every prompt must answer the same questions")
    per_prompt = {}
    for j, name in enumerate(names):
        block = proportion(int(table[:, j].sum()), n)
        per_prompt[name] = {"acc": block["value"], "acc_ci95": block["ci95"], "n_correct": block["k"], "n": n}
    accs = table.mean(axis=0) if n else np.zeros(len(names))
    lo, hi = int(np.argmin(accs)), int(np.argmax(accs))
    out: dict[str, Any] = {"n": n, "n_prompts": len(names), "prompts": per_prompt,
                           "min": float(accs[lo]) if n else None, "argmin": names[lo],
                           "max": float(accs[hi]) if n else None, "argmax": names[hi],
                           "mean": float(accs.mean()) if n else None}
    out["spread"] = out["max"] - out["min"] if n else None

    def spread_of(rows: np.ndarray) -> float:
        means = rows.mean(axis=0)
        return float(means.max() - means.min())

    def fallback() -> tuple[float, float] | None:
        ci = paired_difference_interval(table[:, hi], table[:, lo])
        return None if ci is None else (max(0.0, ci[0]), min(1.0, ci[1]))

    ci, method = robust_interval(table, spread_of, fallback, SPREAD_FALLBACK, seed=seed, n_resamples=n_resamples)
    out["spread_ci95"], out["spread_ci95_method"] = ci, method
    for key, pick, named in (("min", np.min, names[lo]), ("max", np.max, names[hi]), ("mean", np.mean, None)):
        out[f"{key}_ci95"], out[f"{key}_ci95_method"] = _level_interval(table, pick, per_prompt[named] if named else None,
                                                                        out[key], seed=seed, n_resamples=n_resamples)
    worst = proportion(int(table.all(axis=1).sum()), n)
    best = proportion(int(table.any(axis=1).sum()), n)
    out.update(worst_case_acc=worst["value"], worst_case_acc_ci95=worst["ci95"], n_correct_worst_case=worst["k"],
               best_case_acc=best["value"], best_case_acc_ci95=best["ci95"], n_correct_best_case=best["k"])
    return out


def _level_interval(table: np.ndarray, pick: Any, prompt: Mapping[str, Any] | None, value: float | None, *,
                    seed: int, n_resamples: int) -> tuple[list[float] | None, str | None]:
    """The paired bootstrap interval over questions of ``pick`` (min, max or mean) of the prompts' accuracies;
    where it collapses, the Wilson interval of the prompt that gives it (min, max) or of the mean as a share of the
    n questions."""
    n = table.shape[0]

    def fallback() -> tuple[float, float] | None:
        if prompt is not None:
            ci = prompt.get("acc_ci95")
            return None if ci is None else (float(ci[0]), float(ci[1]))
        return None if value is None else wilson_interval(value * n, n)

    return robust_interval(table, lambda rows: float(pick(rows.mean(axis=0))), fallback,
                           "wilson (the prompt that gives it)" if prompt is not None else "wilson (of the mean)",
                           seed=seed, n_resamples=n_resamples)
