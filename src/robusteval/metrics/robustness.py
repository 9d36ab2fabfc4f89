"""Perturbed-benchmark robustness: accuracy per perturbed set, per-set drop and the RB-index.

RB-index = (1 / (T · Acc_org)) · Σ_{i=1..T} (Acc_org − Acc_i): the mean relative accuracy drop over the T
perturbed sets. Lower is more robust; negative when the model does better on perturbed text. Undefined
(None) when Acc_org is 0. Confidence intervals come from a paired bootstrap over examples: each resample
draws the same examples for the original and every set, as the sets are copies of the same examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robusteval.metrics.stats import bootstrap_ci, proportion


def rb_index(acc_original: float, acc_sets: Sequence[float]) -> float | None:
    """The RB-index of one model; None when it is undefined (no sets, or zero original accuracy)."""
    if not acc_sets or acc_original <= 0:
        return None
    return sum(acc_original - acc for acc in acc_sets) / (len(acc_sets) * acc_original)


def _rb_of_rows(rows: np.ndarray) -> float:
    """RB-index of a [n_examples, 1 + T] 0/1 matrix (column 0 = original); NaN when undefined."""
    means = rows.mean(axis=0)
    value = rb_index(float(means[0]), [float(m) for m in means[1:]])
    return float("nan") if value is None else value


def robustness_summary(
    correct_original: Sequence[bool],
    correct_by_set: Mapping[str, Sequence[bool]],
    *,
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """Accuracy on the original and on each set (same examples, same order), drops, and the RB-index with CIs."""
    n = len(correct_original)
    for name, values in correct_by_set.items():
        if len(values) != n:
            raise ValueError(f"set {name}: {len(values)} results for {n} original examples")
    original = proportion(sum(map(bool, correct_original)), n)
    acc_original = original["value"]
    sets: dict[str, Any] = {}
    for name, values in correct_by_set.items():
        acc = proportion(sum(map(bool, values)), n)
        drop = None if acc_original is None or acc["value"] is None else acc_original - acc["value"]
        paired = np.array([[float(a), float(b)] for a, b in zip(correct_original, values, strict=True)])
        sets[name] = {
            "acc": acc["value"],
            "acc_ci95": acc["ci95"],
            "n_correct": acc["k"],
            "drop": drop,
            "relative_drop": None if not acc_original or drop is None else drop / acc_original,
            # CI of the drop itself, paired by example.
            "drop_ci95": bootstrap_ci(paired, lambda rows: float(rows[:, 0].mean() - rows[:, 1].mean()),
                                      seed=seed, n_resamples=n_resamples) if n else None,
        }
    matrix = np.array([[float(correct_original[i])] + [float(v[i]) for v in correct_by_set.values()]
                       for i in range(n)])
    value = rb_index(acc_original or 0.0, [s["acc"] for s in sets.values()]) if n else None
    return {
        "n": n,
        "acc_original": acc_original,
        "acc_original_ci95": original["ci95"],
        "n_correct_original": original["k"],
        "acc": {name: s["acc"] for name, s in sets.items()},
        "sets": sets,
        "T": len(sets),
        "rb_index": value,
        "rb_index_ci95": bootstrap_ci(matrix, _rb_of_rows, seed=seed, n_resamples=n_resamples)
        if value is not None
        else None,
    }
