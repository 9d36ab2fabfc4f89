"""Perturbed-benchmark robustness: accuracy per perturbed set, per-set drop and the RB-index.

RB-index = (1 / (T · Acc_org)) · Σ_{i=1..T} (Acc_org − Acc_i): the mean relative accuracy drop over the T
perturbed sets. Lower is more robust; negative when the model does better on perturbed text. Undefined
(None) when Acc_org is 0.

Only sets that perturbed something count among the T: a set that changed fewer than ``min_changed`` texts
(default 1: a set that changed none, e.g. every back-translation rejected) measures the original again and
would pull the index towards 0, so it is left out of the index (``in_index`` false, ``excluded_reason``) and
still shown with its accuracy. ``T`` is the number of sets averaged, ``sets_in_index`` names them.

Intervals: a paired bootstrap over examples (each resample draws the same examples for the original and every
set, as the sets are copies of the same examples); where it collapses to a point (every resample alike), the
drop falls back to Newcombe's paired hybrid score interval and the RB-index to the ratio box of
:func:`robusteval.metrics.stats.relative_drop_interval` (``*_ci95_method`` names which; docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robusteval.metrics.stats import (
    NEWCOMBE_PAIRED,
    RATIO_BOX,
    paired_difference_interval,
    proportion,
    relative_drop_interval,
    robust_interval,
)

#: A set must change at least this many texts to count in the RB-index (1: a set that changed none is left out).
MIN_CHANGED_DEFAULT = 1


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


def _drop_of_rows(rows: np.ndarray) -> float:
    return float(rows[:, 0].mean() - rows[:, 1].mean())


def paired_drop(
    original: Sequence[bool], perturbed: Sequence[bool], *, seed: int, n_resamples: int
) -> dict[str, Any]:
    """Accuracy of both and the drop (original - perturbed) with its paired interval, on the same examples."""
    n = len(original)
    first, second = proportion(sum(map(bool, original)), n), proportion(sum(map(bool, perturbed)), n)
    pairs = np.array([[float(a), float(b)] for a, b in zip(original, perturbed, strict=True)]).reshape(-1, 2)
    drop = float(pairs[:, 0].mean() - pairs[:, 1].mean()) if n else None
    ci, method = robust_interval(
        pairs,
        _drop_of_rows,
        lambda: paired_difference_interval(pairs[:, 0], pairs[:, 1]),
        NEWCOMBE_PAIRED,
        seed=seed,
        n_resamples=n_resamples,
    )
    return {
        "n": n,
        "acc_original": first["value"],
        "acc_original_ci95": first["ci95"],
        "acc": second["value"],
        "acc_ci95": second["ci95"],
        "n_correct": second["k"],
        "drop": drop,
        "drop_ci95": ci,
        "drop_ci95_method": method,
    }


def robustness_summary(
    correct_original: Sequence[bool],
    correct_by_set: Mapping[str, Sequence[bool]],
    *,
    changed_by_set: Mapping[str, Sequence[bool]] | None = None,
    min_changed: int = MIN_CHANGED_DEFAULT,
    changed_only: bool = False,
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """Accuracy on the original and on each set (same examples, same order), drops, and the RB-index with CIs.

    ``changed_by_set[name][i]``: whether the set changed example i's text (None: not known, every set counts).
    A set with fewer than ``min_changed`` changed texts is left out of the RB-index. ``changed_only`` adds, per
    set, the accuracies and drop on its changed texts alone (``changed_only`` block)."""
    n = len(correct_original)
    for name, values in correct_by_set.items():
        if len(values) != n:
            raise ValueError(f"set {name}: {len(values)} results for {n} original examples")
        if changed_by_set is not None and len(changed_by_set[name]) != n:
            raise ValueError(
                f"set {name}: {len(changed_by_set[name])} changed flags for {n} original examples"
            )
    original = proportion(sum(map(bool, correct_original)), n)
    acc_original = sum(map(bool, correct_original)) / n if n else None
    sets: dict[str, Any] = {}
    for name, values in correct_by_set.items():
        pair = paired_drop(correct_original, values, seed=seed, n_resamples=n_resamples)
        entry: dict[str, Any] = {
            "acc": pair["acc"],
            "acc_ci95": pair["acc_ci95"],
            "n_correct": pair["n_correct"],
            "drop": pair["drop"],
            "relative_drop": None
            if not acc_original or pair["drop"] is None
            else pair["drop"] / acc_original,
            "drop_ci95": pair["drop_ci95"],
            "drop_ci95_method": pair["drop_ci95_method"],
            "in_index": True,
        }
        if changed_by_set is not None:
            flags = [bool(f) for f in changed_by_set[name]]
            changed = proportion(sum(flags), n)
            entry.update(
                n_changed=sum(flags), changed_share=changed["value"], changed_share_ci95=changed["ci95"]
            )
            if sum(flags) < min_changed:
                entry["in_index"] = False
                entry["excluded_reason"] = excluded_reason(sum(flags), n, min_changed)
            if changed_only:
                keep = [i for i, f in enumerate(flags) if f]
                entry["changed_only"] = paired_drop(
                    [correct_original[i] for i in keep],
                    [values[i] for i in keep],
                    seed=seed,
                    n_resamples=n_resamples,
                )
        sets[name] = entry
    kept = [name for name, entry in sets.items() if entry["in_index"]]
    value = rb_index(acc_original or 0.0, [sets[name]["acc"] for name in kept]) if n else None
    ci: list[float] | None = None
    method: str | None = None
    if value is not None:
        matrix = np.array(
            [
                [float(correct_original[i])] + [float(correct_by_set[name][i]) for name in kept]
                for i in range(n)
            ]
        )
        ci, method = robust_interval(
            matrix,
            _rb_of_rows,
            lambda: relative_drop_interval(matrix[:, 0], matrix[:, 1:].mean(axis=1)),
            RATIO_BOX,
            seed=seed,
            n_resamples=n_resamples,
        )
    return {
        "n": n,
        "acc_original": acc_original,
        "acc_original_ci95": original["ci95"],
        "n_correct_original": original["k"],
        "acc": {name: s["acc"] for name, s in sets.items()},
        "sets": sets,
        "T": len(kept),
        "sets_in_index": kept,
        "sets_excluded": [name for name in sets if name not in kept],
        "min_changed": min_changed,
        "rb_index": value,
        "rb_index_ci95": ci,
        "rb_index_ci95_method": method,
    }


def excluded_reason(changed: int, n: int, min_changed: int) -> str:
    """Why a set that changed ``changed`` of ``n`` texts is left out under ``min_changed``: the count against the
    threshold; "measures the original again" only of a set that changed nothing."""
    reason = f"changed {changed} of {n} texts, fewer than min_changed {min_changed}"
    if changed == 0:
        return f"{reason}: it measures the original again"
    if min_changed > n:
        return f"{reason}, which is more than the {n} examples: no set can reach it"
    return reason


def excluded_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per set left out of the RB-index, naming it and why (what the CLI, quick start and report show)."""
    return [
        f"{name}: left out of the RB-index ({entry.get('excluded_reason')})"
        for name, entry in (summary.get("sets") or {}).items()
        if entry.get("in_index") is False
    ]


def index_note(summary: Mapping[str, Any]) -> str:
    """``over 1 of 2 sets (C-homophone)``: how many sets the RB-index averages."""
    kept = summary.get("sets_in_index")
    total = len(summary.get("sets") or {})
    if kept is None:
        return f"over {summary.get('T')} set(s)"
    return f"over {len(kept)} of {total} set(s)" + (f" ({', '.join(kept)})" if kept else "")


#: What the RB-index over the labelled meaning-preserving edits is called wherever it is shown.
PRESERVED_LABEL = "RB-index over meaning-preserving edits"


def _preserved_rb_of_rows(rows: np.ndarray) -> float:
    """The preserved-only RB-index of a [n, 1 + 2T] matrix: column 0 the original's 0/1, columns 1..T each set's,
    columns T+1..2T each set's 0/1 mask (the example's edit judged the same); NaN when undefined."""
    sets = (rows.shape[1] - 1) // 2
    drops = []
    for i in range(sets):
        mask = rows[:, 1 + sets + i] > 0
        if not mask.any():
            continue
        original = float(rows[mask, 0].mean())
        if original <= 0:
            continue
        drops.append((original - float(rows[mask, 1 + i].mean())) / original)
    return float(np.mean(drops)) if drops else float("nan")


def preserved_only_summary(
    correct_original: Sequence[bool],
    correct_by_set: Mapping[str, Sequence[bool]],
    kept_by_set: Mapping[str, Sequence[bool]],
    *,
    sets: Sequence[str] | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """Each set's accuracy over the examples whose edit a person judged "same meaning" (``kept_by_set[name][i]``),
    paired with the original accuracy on those same examples, and the RB-index over them:
    (1/T) Σ_i (Acc_org(S_i) − Acc_i(S_i)) / Acc_org(S_i), S_i the kept examples of set i (the headline formula
    when S_i is every example). ``sets``: the sets it may average (default: all); a set with no kept example or an
    original accuracy of 0 on them is left out (``excluded_reason``). The interval: a paired bootstrap over the
    examples (the masks drawn with them), falling back to the ratio box of the sets' pooled pairs."""
    names = list(sets if sets is not None else correct_by_set)
    out_sets: dict[str, Any] = {}
    kept_names: list[str] = []
    for name in correct_by_set:
        keep = [i for i, flag in enumerate(kept_by_set.get(name) or ()) if flag]
        block = paired_drop([correct_original[i] for i in keep], [correct_by_set[name][i] for i in keep],
                            seed=seed, n_resamples=n_resamples)
        if name not in names:
            block["in_index"], block["excluded_reason"] = False, "left out of the headline RB-index"
        elif not keep:
            block["in_index"], block["excluded_reason"] = False, "no edit of it labelled same meaning"
        elif not block["acc_original"]:
            block["in_index"], block["excluded_reason"] = False, "original accuracy 0 on its kept examples"
        else:
            block["in_index"] = True
            kept_names.append(name)
        out_sets[name] = block
    value: float | None = None
    ci: list[float] | None = None
    method: str | None = None
    if kept_names:
        n = len(correct_original)
        matrix = np.array([[float(correct_original[i])] + [float(correct_by_set[s][i]) for s in kept_names]
                           + [float(bool(kept_by_set[s][i])) for s in kept_names] for i in range(n)])
        value = _preserved_rb_of_rows(matrix)
        pooled = [(matrix[i, 0], matrix[i, 1 + j]) for j in range(len(kept_names)) for i in range(n)
                  if matrix[i, 1 + len(kept_names) + j] > 0]
        pairs = np.array(pooled, dtype=float).reshape(-1, 2)
        ci, method = robust_interval(
            matrix,
            _preserved_rb_of_rows,
            lambda: relative_drop_interval(pairs[:, 0], pairs[:, 1]),
            RATIO_BOX,
            seed=seed,
            n_resamples=n_resamples,
        )
    return {
        "label": PRESERVED_LABEL,
        "n": sum(out_sets[s]["n"] for s in kept_names),
        "sets": out_sets,
        "T": len(kept_names),
        "sets_in_index": kept_names,
        "rb_index": value,
        "rb_index_ci95": ci,
        "rb_index_ci95_method": method,
    }


def preserved_line(block: Mapping[str, Any]) -> str:
    """``RB-index over meaning-preserving edits (n=23, over 2 set(s)): 0.1200 [0.0100, 0.2500]``, or why it is
    undefined."""
    from robusteval.metrics.formatting import format_rate

    head = f"{block.get('label') or PRESERVED_LABEL} (n={block.get('n')}, over {block.get('T')} set(s))"
    if block.get("rb_index") is None:
        return f"{head}: undefined (no set has an edit labelled same meaning with a right original answer)"
    return f"{head}: {format_rate(block['rb_index'], block.get('rb_index_ci95'), digits=4, n=block.get('n'))}"
