"""chrF (Popović 2015): the character n-gram F-score, as sacreBLEU computes it by default, on a 0-1 scale.

Whitespace is removed; for each n = 1..6 the n-gram precision and recall of ``hypothesis`` against
``reference`` are computed from clipped counts; precision and recall are averaged over the orders that both
texts have (the "effective order"), and F_beta of the two averages is the score (beta = 2: recall weighs
four times as much as precision). Pure Python, no model: the similarity measure for Chinese texts.
"""

from __future__ import annotations

from collections import Counter

CHAR_ORDER = 6
BETA = 2.0


def char_ngrams(text: str, n: int) -> Counter[str]:
    """Counts of the character n-grams of ``text`` with its whitespace removed."""
    chars = "".join(text.split())
    return Counter(chars[i : i + n] for i in range(len(chars) - n + 1))


def chrf(reference: str, hypothesis: str, *, order: int = CHAR_ORDER, beta: float = BETA) -> float:
    """chrF of ``hypothesis`` against ``reference`` in [0, 1]; 1.0 for identical texts (after whitespace
    removal), 0.0 when no order has n-grams on both sides."""
    precision = recall = 0.0
    effective = 0
    for n in range(1, order + 1):
        ref, hyp = char_ngrams(reference, n), char_ngrams(hypothesis, n)
        n_ref, n_hyp = sum(ref.values()), sum(hyp.values())
        if not n_ref or not n_hyp:
            continue
        match = sum((ref & hyp).values())
        precision += match / n_hyp
        recall += match / n_ref
        effective += 1
    if not effective:
        return 0.0
    precision, recall = precision / effective, recall / effective
    if precision + recall == 0:
        return 0.0
    factor = beta * beta
    return (1 + factor) * precision * recall / (factor * precision + recall)
