"""Agreement statistics on a ten-item case computed by hand (see the comments for the arithmetic)."""

from __future__ import annotations

import pytest

from robusteval.metrics.agreement import agreement, category_table, cohen_kappa, confusion_matrix

# Items 0, 1, 2 and 8 are incorrect; the judge flags 0, 1, 3 and 8.
GOLD = [True, True, True, False, False, False, False, False, True, False]
FLAGGED = [True, True, False, True, False, False, False, False, True, False]


def test_accuracy_kappa_precision_recall_by_hand() -> None:
    result = agreement(GOLD, FLAGGED)
    assert result["confusion"] == {"tp": 3, "fp": 1, "fn": 1, "tn": 5}
    assert result["accuracy"] == pytest.approx(0.8)
    # p_o = 0.8; both raters say "incorrect" 4 times in 10: p_e = 0.4 * 0.4 + 0.6 * 0.6 = 0.52.
    assert result["kappa"] == pytest.approx((0.8 - 0.52) / (1 - 0.52))
    assert result["precision"] == pytest.approx(0.75) and result["recall"] == pytest.approx(0.75)
    assert result["f1"] == pytest.approx(0.75)


def test_kappa_edge_cases() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0  # one label throughout, nothing to disagree on
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    # Three labels: p_o = 2/4; marginals a: 2/4 and 2/4, b: 1/4 and 2/4, c: 1/4 and 0, so
    # p_e = 1/4 + 1/8 + 0 = 3/8 and kappa = (1/2 - 3/8) / (5/8) = 0.2.
    assert cohen_kappa(["a", "a", "b", "c"], ["a", "b", "b", "a"]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])


def test_no_flags_give_undefined_precision() -> None:
    result = agreement([True, False], [False, False])
    assert result["precision"] is None and result["recall"] == 0.0 and result["f1"] is None


def test_f1_is_zero_when_precision_or_recall_is_zero_and_none_only_when_undefined() -> None:
    # Two incorrect items, neither flagged; one correct item flagged: tp = 0, fp = 1, fn = 2, so
    # precision = 0 / 1 = 0.0 and recall = 0 / 2 = 0.0, both defined: F1 = 0.0.
    result = agreement([True, True, False], [False, False, True])
    assert (result["precision"], result["recall"], result["f1"]) == (0.0, 0.0, 0.0)
    # tp = 1, fp = 0, fn = 0 on one item, and one correct item not flagged: precision = recall = 1, F1 = 1.
    assert agreement([True, False], [True, False])["f1"] == 1.0
    # Only correct items, none flagged: recall = 0 / 0 is undefined, so F1 is too.
    none = agreement([False, False], [False, False])
    assert none["recall"] is None and none["f1"] is None


def test_per_category_recall_and_precision_of_typed_flags() -> None:
    categories = ["calc", "calc", "info", None, None, None, None, None, "irrelevant", None]
    types = ["calc", "info", None, "info", None, None, None, None, "irrelevant", None]
    table = category_table(("calc", "info", "irrelevant"), categories, GOLD, FLAGGED, types)
    assert table["calc"] == {"n": 2, "flagged": 2, "recall": 1.0, "n_typed": 1, "precision": 1.0,
                             "type_precision": 1.0}
    # Typed "info": item 1 (incorrect, but a calculation error) and item 3 (a correct item).
    assert table["info"] == {"n": 1, "flagged": 0, "recall": 0.0, "n_typed": 2, "precision": 0.5,
                             "type_precision": 0.0}
    assert table["irrelevant"]["recall"] == 1.0 and table["irrelevant"]["type_precision"] == 1.0


def test_confusion_matrix_lists_every_label() -> None:
    matrix = confusion_matrix(["a", "a", "b"], ["a", "c", "b"], ["a", "b"])
    assert matrix == {"a": {"a": 1, "b": 0, "c": 1}, "b": {"a": 0, "b": 1, "c": 0}, "c": {"a": 0, "b": 0, "c": 0}}
