"""chrF against values computed by hand (n-gram counts written out in the comments)."""

from __future__ import annotations

import pytest

from robusteval.metrics.chrf import char_ngrams, chrf


def test_char_ngrams_drop_whitespace() -> None:
    assert char_ngrams("a b a", 1) == {"a": 2, "b": 1}
    assert char_ngrams("a b a", 2) == {"ab": 1, "ba": 1}
    assert char_ngrams("ab", 3) == {}


@pytest.mark.parametrize(("reference", "hypothesis", "score"), [
    ("小明有三个苹果", "小明有三个苹果", 1.0),
    ("a b", "ab", 1.0),  # whitespace is removed first
    ("abc", "xyz", 0.0),
    # n=1: ref {a, b}, hyp {a, b, c}: P 2/3, R 1. n=2: ref {ab}, hyp {ab, bc}: P 1/2, R 1. n>=3: the reference
    # has none, so those orders do not count. P = (2/3 + 1/2)/2 = 7/12, R = 1; F2 = 5PR/(4P + R) = 35/40.
    ("ab", "abc", 35 / 40),
    # Reference and hypothesis swapped: P = 1, R = 7/12; F2 = 5 * 7/12 / (4 + 7/12) = 35/55 (recall weighs more).
    ("abc", "ab", 35 / 55),
    # 6 characters each, one replaced (很 -> 不): matches per order 5/6, 3/5, 2/4, 1/3, 0/2, 0/1 on both sides,
    # so P = R = (5/6 + 3/5 + 1/2 + 1/3 + 0 + 0)/6 = 68/180 and F2 = 68/180.
    ("今天天气很好", "今天天气不好", 68 / 180),
    # ref 小明有三个苹果 (7), hyp 小明有四个苹果 (7): matches 6/7, 4/6, 2/5, 0/4, 0/3, 0/2 ->
    # P = R = (6/7 + 2/3 + 2/5)/6.
    ("小明有三个苹果", "小明有四个苹果", (6 / 7 + 2 / 3 + 2 / 5) / 6),
])
def test_chrf_by_hand(reference: str, hypothesis: str, score: float) -> None:
    assert chrf(reference, hypothesis) == pytest.approx(score)


def test_beta_weighs_recall() -> None:
    # P = 1, R = 7/12 (see above): beta 1 is the harmonic mean 2PR/(P + R) = (7/6)/(19/12) = 14/19.
    assert chrf("abc", "ab", beta=1.0) == pytest.approx(14 / 19)
    assert chrf("", "") == 0.0 and chrf("abc", "") == 0.0
