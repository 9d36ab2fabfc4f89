"""Black-box word-importance attack on a classifier that returns only a label.

Two stages (the patent's framework; TextAttack calls it greedy search with word-importance ranking):

1. **Ranking.** Each word's importance = confidence(true label | text) − confidence(true label | text with the
   word deleted). Words with importance > 0 are kept, highest first.
2. **Perturbation.** In that order, every candidate replacement of the word (from one perturbation method, or
   from all of them for the combined attack) is queried; the candidate that lowers the confidence most is kept
   (a candidate that flips the label ends the attack: success). A word is only counted as perturbed when a
   candidate lowered the confidence. The attack stops before the perturbed-word rate would exceed α, or when
   the query budget is spent.

Confidence estimators (``ConfidenceMode``), for backends with and without scores:

* ``logprob``: p(true label) from the softmax of the label verbalizers' log-probs (needs LOGPROBS); 1 query
  per text.
* ``sample``: the share of ``n_samples`` answers sampled at ``temperature`` that name the true label (a
  hard-label estimate; answers that name no label count against it); a text costs 1 greedy query + n samples,
  and the samples are skipped once the greedy label has flipped.
* ``greedy``: 1 if the greedy label is the true label else 0: a pure flip/no-flip signal, 1 query per text.

Success is always judged on the greedy (temperature 0) label: what the model actually answers. An answer
that names no label counts as a flip (the model no longer gives the right answer, as in accuracy under
attack); the record's ``final_label`` is then None, so such successes can be told apart.
Queries are counted per distinct text asked within one example (a repeated text is free), independently
of the run store's cache, so the numbers are the same on a first run and on a resumed one.

All α rates come from one run at the largest α: the attack is deterministic and a run at a smaller α is a
prefix of it, stopping once its word allowance is used, so per-rate success and query counts are exact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import LabelClassifier, example_fields
from robusteval.models.base import LOGPROBS
from robusteval.perturbations.base import Edit, Perturbation, Protection, Span, apply_edits
from robusteval.perturbations.segment import is_word, segment_words

ConfidenceMode = Literal["logprob", "sample", "greedy"]


@dataclass(frozen=True)
class WordImportanceConfig:
    rates: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3)  # α values; the run uses the largest
    budget: int = 500  # queries per example, ranking included
    confidence: ConfidenceMode = "logprob"
    n_samples: int = 5
    temperature: float = 0.7
    fields: tuple[str, ...] = ("text",)
    language: Literal["zh", "en"] = "zh"
    rank: bool = True  # False = the greedy baseline: words in text order, no ranking queries
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rates or any(not 0 < r <= 1 for r in self.rates):
            raise UserError(f"--rates must be in (0, 1], got {list(self.rates)}")
        if self.budget < 1:
            raise UserError(f"--budget must be at least 1, got {self.budget}")
        if self.confidence == "sample" and self.n_samples < 1:
            raise UserError("--n-samples must be at least 1")

    @property
    def max_rate(self) -> float:
        return max(self.rates)


@dataclass(frozen=True)
class Judgement:
    label: str | None  # the greedy label
    confidence: float  # estimated confidence in the true label


@dataclass(frozen=True)
class _Word:
    field: str
    index: int  # position among the field's word spans
    span: Span  # in the original field text


@dataclass
class _State:
    """The texts under attack: chosen replacements per (field, word index)."""

    originals: dict[str, str]
    replacements: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)  # -> (text, method)
    spans: dict[str, list[Span]] = field(default_factory=dict)

    def render(self, extra: tuple[_Word, str] | None = None, *, delete: _Word | None = None) -> dict[str, str]:
        chosen = dict(self.replacements)
        if extra is not None:
            chosen[(extra[0].field, extra[0].index)] = (extra[1], "")
        if delete is not None:
            chosen[(delete.field, delete.index)] = ("", "")
        out = {}
        for name, text in self.originals.items():
            edits = [
                Edit(span.start, span.end, span.text, chosen[(name, i)][0])
                for i, span in enumerate(self.spans[name])
                if (name, i) in chosen
            ]
            out[name] = apply_edits(text, edits) if edits else text
        return out

    def current_span(self, word: _Word) -> tuple[str, Span]:
        """The field text with the replacements so far, and ``word``'s span in it."""
        text = self.render()[word.field]
        shift = sum(
            len(self.replacements[(word.field, i)][0]) - len(span.text)
            for i, span in enumerate(self.spans[word.field][: word.index])
            if (word.field, i) in self.replacements
        )
        return text, Span(word.span.start + shift, word.span.end + shift, word.span.text)

    def edits(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for (name, i), (text, method) in sorted(self.replacements.items()):
            span = self.spans[name][i]
            out.setdefault(name, []).append({**Edit(span.start, span.end, span.text, text).to_dict(), "method": method})
        return out


class _Oracle:
    """Confidence in the true label for one example's texts, with query counting and the budget."""

    def __init__(self, classifier: LabelClassifier, config: WordImportanceConfig, true_label: str,
                 base: Mapping[str, str]) -> None:
        self.classifier = classifier
        self.config = config
        self.true_label = true_label
        self.base = dict(base)  # the example's other fields (hypothesis, …)
        self.queries = 0
        self._memo: dict[tuple[tuple[str, str], ...], Judgement] = {}

    def cost(self) -> int:
        return 1 + (self.config.n_samples if self.config.confidence == "sample" else 0)

    def remaining(self) -> int:
        return self.config.budget - self.queries

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
            if self.config.confidence == "logprob":
                confidence = float((record.get("probs") or {}).get(self.true_label, 0.0))
            elif self.config.confidence == "greedy" or label != self.true_label:
                # A flipped greedy label ends the attack; sampling it would only spend queries.
                confidence = 1.0 if label == self.true_label else 0.0
            else:
                need_samples.append((key, fields))
                confidence = math.nan
            self._memo[key] = Judgement(label, confidence)
        if need_samples:
            self.queries += self.config.n_samples * len(need_samples)
            sampled = self.classifier.sample_labels(
                [fields for _, fields in need_samples], n=self.config.n_samples,
                temperature=self.config.temperature, seed=self.config.seed,
            )
            for (key, _), labels in zip(need_samples, sampled, strict=True):
                share = sum(1 for label in labels if label == self.true_label) / len(labels)
                self._memo[key] = Judgement(self._memo[key].label, share)
        return [self._memo.get(key) for key in keys]


def attack_example(
    example: Example,
    classifier: LabelClassifier,
    methods: Sequence[Perturbation],
    config: WordImportanceConfig,
    *,
    protect: Protection,
) -> dict[str, Any]:
    """Attack one example; returns a JSON-ready record (see the module docstring for the algorithm)."""
    fields_all = example_fields(example)
    # "text", "premise" and "question" all name the question; attack it once, as "text".
    names = list(dict.fromkeys("text" if f in ("premise", "question") else f for f in config.fields))
    originals = {name: fields_all[name] for name in names if fields_all.get(name)}
    if not originals:
        raise UserError(f"example {example.id}: none of the fields {', '.join(config.fields)} has text")
    base = {k: v for k, v in fields_all.items() if k not in originals}
    if "text" in originals:
        base.pop("premise", None)
    oracle = _Oracle(classifier, config, example.answer, base)
    state = _State(originals, spans={name: segment_words(text, config.language) for name, text in originals.items()})

    def ask(texts: Sequence[Mapping[str, str]]) -> list[Judgement | None]:
        return oracle.judge([{**t, "premise": t["text"]} if "text" in t else dict(t) for t in texts])

    record: dict[str, Any] = {
        "id": example.id,
        "label": example.answer,
        "original": dict(originals),
        "methods": [m.name for m in methods],
    }
    first = ask([originals])[0]
    if first is None:
        raise UserError("--budget is smaller than the cost of one query")
    record["original_label"] = first.label
    if first.label != example.answer:
        return {**record, "status": "skipped", "queries": oracle.queries, "n_words": 0}

    protected = {name: protect.mask(text) for name, text in originals.items()}
    words = [
        _Word(name, i, span)
        for name, spans in state.spans.items()
        for i, span in enumerate(spans)
        if is_word(span) and not any(protected[name][span.start : span.end])
    ]
    n_words = sum(1 for spans in state.spans.values() for span in spans if is_word(span))
    allowance = math.floor(config.max_rate * n_words + 1e-9)
    if config.rank:
        deleted = ask([state.render(delete=w) for w in words])
        scored = [(first.confidence - j.confidence, w) for w, j in zip(words, deleted, strict=True) if j is not None]
        order = [w for score, w in sorted(scored, key=lambda sw: -sw[0]) if score > 0]
        importance = [{"field": w.field, "word": w.span.text, "start": w.span.start, "score": round(s, 6)}
                      for s, w in sorted(scored, key=lambda sw: -sw[0])]
    else:
        order, importance = list(words), []
    accept_queries = [oracle.queries]  # queries spent when the m-th word had been perturbed
    confidence = first.confidence
    status = "exhausted"
    final_label = first.label
    for word in order:
        if len(state.replacements) + 1 > allowance:
            status = "rate"
            break
        if oracle.remaining() < oracle.cost():
            status = "budget"
            break
        text, span = state.current_span(word)
        options: list[tuple[str, str]] = []
        seen = {span.text}
        for method in methods:
            rng = random.Random(f"{config.seed}\x1f{method.name}\x1f{example.id}\x1f{word.field}\x1f{word.index}")
            for candidate in method.candidates(text, span, rng):
                if candidate not in seen:
                    seen.add(candidate)
                    options.append((candidate, method.name))
        if not options:
            continue
        judged = ask([state.render((word, candidate)) for candidate, _ in options])
        # Best candidate: a flip first, then the lowest confidence in the true label; ties keep the earlier one.
        scored = [(j.label == example.answer, j.confidence, k) for k, j in enumerate(judged) if j is not None]
        if not scored:
            status = "budget"
            break
        not_flipped, best_confidence, k = min(scored)
        if not not_flipped or best_confidence < confidence:
            state.replacements[(word.field, word.index)] = options[k]
            confidence = best_confidence
            accept_queries.append(oracle.queries)
            final_label = judged[k].label  # type: ignore[union-attr]
            if not not_flipped:
                status = "success"
                break
        if len(scored) < len(judged):
            status = "budget"
            break
    n_perturbed = len(state.replacements)
    success = status == "success"
    per_rate = {}
    for rate in sorted(config.rates):
        limit = math.floor(rate * n_words + 1e-9)
        ok = success and n_perturbed <= limit
        queries = oracle.queries if ok or limit >= len(accept_queries) else accept_queries[limit]
        per_rate[_rate_key(rate)] = {"success": ok, "queries": queries,
                                     "perturbed_words": n_perturbed if ok else min(n_perturbed, limit)}
    return {
        **record,
        "status": "success" if success else "failed",
        "stop_reason": status,
        "adversarial": state.render(),
        "edits": state.edits(),
        "final_label": final_label,
        "final_confidence": confidence,
        "queries": oracle.queries,
        "n_words": n_words,
        "perturbed_words": n_perturbed,
        "perturbed_rate": n_perturbed / n_words if n_words else 0.0,
        "importance": importance,
        "per_rate": per_rate,
    }


def _rate_key(rate: float) -> str:
    return f"{rate:g}"


def attack_summary(records: Sequence[Mapping[str, Any]], rates: Sequence[float]) -> dict[str, Any]:
    """The TextAttack-style table per α: successes, failures, skips, accuracies, perturbed %, queries."""
    n = len(records)
    skipped = [r for r in records if r["status"] == "skipped"]
    attacked = [r for r in records if r["status"] != "skipped"]
    by_rate: dict[str, Any] = {}
    for rate in sorted(rates):
        key = _rate_key(rate)
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
    return {"n": n, "n_attacked": len(attacked), "n_skipped": len(skipped), "by_rate": by_rate,
            "asr_by_rate": {k: v["attack_success_rate"] for k, v in by_rate.items()}}


def _percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def default_confidence(classifier: LabelClassifier) -> ConfidenceMode:
    """log-probs when the backend can score, else sampled label frequencies."""
    return "logprob" if LOGPROBS in classifier.backend.capabilities else "sample"
