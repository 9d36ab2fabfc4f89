"""The attack's view of the target: confidence in the true label, under a query budget, with a memo.

TextAttack's goal-function idea: one object knows the goal (the true label), estimates how far a text is
from reaching it, counts every query against the budget and answers a repeated text for free. Queries are
counted per distinct text asked within one example, independently of the run store's cache, so the numbers
are the same on a first run and on a resumed one.

Confidence estimators (``ConfidenceMode``), for backends with and without scores:

* ``logprob``: p(true label) from the softmax of the label verbalizers' log-probs (needs LOGPROBS); 1 query
  per text.
* ``sample``: the share of ``n_samples`` answers sampled at ``temperature`` that name the true label (a
  hard-label estimate; answers that name no label count against it); a text costs 1 greedy query + n samples,
  and the samples are skipped once the greedy label has flipped.
* ``greedy``: 1 if the greedy label is the true label else 0: a pure flip/no-flip signal, 1 query per text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from robusteval.evals.classification import LabelClassifier
from robusteval.models.base import can_score

ConfidenceMode = Literal["logprob", "sample", "greedy"]
CONFIDENCE_MODES: tuple[str, ...] = ("logprob", "sample", "greedy")


@dataclass(frozen=True)
class Judgement:
    label: str | None  # the greedy label
    confidence: float  # estimated confidence in the true label


def default_confidence(classifier: LabelClassifier) -> ConfidenceMode:
    """log-probs when the backend can score, else sampled label frequencies."""
    return "logprob" if can_score(classifier.backend) else "sample"


class _Oracle:
    """Confidence in the true label for one example's texts, with query counting and the budget."""

    def __init__(self, classifier: LabelClassifier, true_label: str, base: Mapping[str, str], *, budget: int,
                 confidence: ConfidenceMode, n_samples: int = 5, temperature: float = 0.7, seed: int = 0) -> None:
        self.classifier = classifier
        self.true_label = true_label
        self.base = dict(base)  # the example's other fields (hypothesis, …)
        self.budget = budget
        self.confidence = confidence
        self.n_samples = n_samples
        self.temperature = temperature
        self.seed = seed
        self.queries = 0
        self._memo: dict[tuple[tuple[str, str], ...], Judgement] = {}

    def cost(self) -> int:
        """Queries one new text costs: the greedy answer, plus the samples of the sampling estimator."""
        return 1 + (self.n_samples if self.confidence == "sample" else 0)

    def remaining(self) -> int:
        return self.budget - self.queries

    def judge(self, texts: Sequence[Mapping[str, str]]) -> list[Judgement | None]:
        """Judgements in order; None for texts the budget no longer covers (the rest are cut off)."""
        asked = [{**self.base, **changed} for changed in texts]
        keys = [tuple(sorted(fields.items())) for fields in asked]
        fresh: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}  # first-seen order; repeats are free
        for key, fields in zip(keys, asked, strict=True):
            if key not in self._memo:
                fresh.setdefault(key, fields)
        # Each text's full cost (greedy + samples) is reserved up front, so a batch never overdraws the budget.
        affordable = list(fresh.items())[: max(0, self.remaining()) // self.cost()]
        self.queries += len(affordable)
        records = self.classifier.classify([fields for _, fields in affordable])
        need_samples = []
        for (key, fields), record in zip(affordable, records, strict=True):
            label = record.get("label")
            if self.confidence == "logprob":
                confidence = float((record.get("probs") or {}).get(self.true_label, 0.0))
            elif self.confidence == "greedy" or label != self.true_label:
                # A flipped greedy label ends the attack; sampling it would only spend queries.
                confidence = 1.0 if label == self.true_label else 0.0
            else:
                need_samples.append((key, fields))
                confidence = math.nan
            self._memo[key] = Judgement(label, confidence)
        if need_samples:
            self.queries += self.n_samples * len(need_samples)
            sampled = self.classifier.sample_labels(
                [fields for _, fields in need_samples], n=self.n_samples, temperature=self.temperature,
                seed=self.seed,
            )
            for (key, _), labels in zip(need_samples, sampled, strict=True):
                share = sum(1 for label in labels if label == self.true_label) / len(labels)
                self._memo[key] = Judgement(self._memo[key].label, share)
        return [self._memo.get(key) for key in keys]
