"""How a judge agrees with labels: pure functions over gold labels and a judge's verdicts.

Convention: the *positive* class is "incorrect" (the judge flags the reasoning as wrong), as in MATCHA, where a
flag on a kept answer is what makes a success.

* :func:`binary_confusion`: ``tp`` (incorrect, flagged), ``fp`` (correct, flagged), ``fn`` (incorrect, not
  flagged), ``tn`` (correct, not flagged).
* :func:`cohen_kappa`: agreement beyond chance, ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` from the two raters'
  marginals; 1.0 when both raters use one and the same label throughout (nothing to disagree on), 0.0 when
  ``p_e == 1`` otherwise.
* :func:`ratio`: a share that is None over an empty denominator.
* :func:`agreement`: accuracy, kappa, precision, recall and F1 of "incorrect", and the confusion counts. F1 is
  0.0 when precision and recall are both defined and one of them is 0, None only when one is undefined.
* :func:`category_table`: per gold category, how many items, how many were flagged (recall), and per
  predicted error type how many flagged items carry it and how many of those are truly incorrect (precision)
  and truly of that category (type precision).
* :func:`confusion_matrix`: counts of (gold, predicted) pairs, every listed label present.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def binary_confusion(gold_incorrect: Sequence[bool], flagged: Sequence[bool]) -> dict[str, int]:
    """Confusion counts of "incorrect" (positive) against the judge's flags."""
    if len(gold_incorrect) != len(flagged):
        raise ValueError(f"{len(gold_incorrect)} labels but {len(flagged)} verdicts")
    pairs = list(zip(gold_incorrect, flagged, strict=True))
    return {"tp": pairs.count((True, True)), "fp": pairs.count((False, True)),
            "fn": pairs.count((True, False)), "tn": pairs.count((False, False))}


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items (None for no items)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} ratings against {len(b)}")
    n = len(a)
    if not n:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    expected = sum((list(a).count(label) / n) * (list(b).count(label) / n) for label in labels)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def agreement(gold_incorrect: Sequence[bool], flagged: Sequence[bool]) -> dict[str, Any]:
    """``{"n", "accuracy", "kappa", "precision", "recall", "f1", "confusion"}`` of the flags against the labels."""
    counts = binary_confusion(gold_incorrect, flagged)
    tp, fp, fn, tn = counts["tp"], counts["fp"], counts["fn"], counts["tn"]
    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    f1 = None if precision is None or recall is None else (
        2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {
        "n": len(flagged),
        "accuracy": ratio(tp + tn, len(flagged)),
        "kappa": cohen_kappa(list(gold_incorrect), list(flagged)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "confusion": counts,
    }


def category_table(categories: Sequence[str], gold_categories: Sequence[str | None], gold_incorrect: Sequence[bool],
                   flagged: Sequence[bool], predicted_types: Sequence[str | None]) -> dict[str, dict[str, Any]]:
    """Per error category ``c`` (items are parallel sequences; ``predicted_types[i]`` is the error type the
    judge path gave a flagged item, None for an unflagged one):

    * ``n``: incorrect items of gold category ``c``; ``flagged``: how many of them were flagged;
      ``recall`` = flagged / n;
    * ``n_typed``: flagged items typed ``c``; ``precision``: the share of those that are truly incorrect (of any
      category); ``type_precision``: the share that are truly of category ``c``.
    """
    table: dict[str, dict[str, Any]] = {}
    rows = list(zip(gold_categories, gold_incorrect, flagged, predicted_types, strict=True))
    for category in categories:
        gold = [r for r in rows if r[1] and r[0] == category]
        typed = [r for r in rows if r[2] and r[3] == category]
        hits = sum(1 for r in gold if r[2])
        table[category] = {
            "n": len(gold),
            "flagged": hits,
            "recall": ratio(hits, len(gold)),
            "n_typed": len(typed),
            "precision": ratio(sum(1 for r in typed if r[1]), len(typed)),
            "type_precision": ratio(sum(1 for r in typed if r[1] and r[0] == category), len(typed)),
        }
    return table


def confusion_matrix(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """``matrix[g][p]``: how many items of gold label ``g`` got ``p``; every label in ``labels`` is listed, and
    labels met in the data but not listed are added."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    names = list(dict.fromkeys([*labels, *gold, *predicted]))
    matrix = {g: dict.fromkeys(names, 0) for g in names}
    for g, p in zip(gold, predicted, strict=True):
        matrix[g][p] += 1
    return matrix
