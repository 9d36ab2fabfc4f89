"""Ranking and perturbation search of the word-importance attack on one example (``attack_example``).

Two stages (the patent's framework; TextAttack calls it greedy search with word-importance ranking):

1. **Ranking.** Each word's importance = confidence(true label | text) − confidence(true label | text with the
   word deleted). Words with importance > 0 are kept, highest first.
2. **Perturbation.** In that order, every candidate replacement of the word (from one perturbation method, or
   from all of them for the combined attack) is queried; the candidate that lowers the confidence most is kept
   (a candidate that flips the label ends the attack: success). A word is only counted as perturbed when a
   candidate lowered the confidence. The attack stops before the perturbed-word rate would exceed α, or when
   the query budget is spent. With ``max_drift``, candidates whose texts drift further from the originals
   (:mod:`robusteval.analysis.drift`) are dropped before they are queried, so they cost no budget.

Success is always judged on the greedy (temperature 0) label: what the model actually answers. An answer
that names no label counts as a flip (the model no longer gives the right answer, as in accuracy under
attack); the record's ``final_label`` is then None, so such successes can be told apart. Confidence and
query counting are the oracle's (:mod:`robusteval.attacks.wordsearch.oracle`); per-rate figures come
from one run at the largest α (:mod:`robusteval.metrics.wordimportance`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from robusteval.attacks.wordsearch.oracle import ConfidenceMode, Judgement, _Oracle
from robusteval.attacks.wordsearch.settings import (
    BUDGET,
    N_SAMPLES,
    RATES,
    SAMPLE_TEMPERATURE,
    check_search_values,
)
from robusteval.config import validated
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.evals.classification import LabelClassifier, example_fields
from robusteval.metrics.wordimportance import ORIGINAL_WRONG, per_rate_outcomes, word_allowance
from robusteval.perturbations.base import Edit, Perturbation, Protection, Span, apply_edits
from robusteval.perturbations.segment import is_word, segment_words
from robusteval.seeding import derive_random

if TYPE_CHECKING:
    from robusteval.analysis.drift import DriftMeter


@validated
@dataclass(frozen=True)
class WordImportanceConfig:
    """The search's settings for one example (the run config is ``WordImportanceRunConfig``)."""

    rates: tuple[float, ...] = RATES  # α values; the run uses the largest
    budget: int = BUDGET  # queries per example, ranking included
    confidence: ConfidenceMode = "logprob"
    n_samples: int = N_SAMPLES
    temperature: float = SAMPLE_TEMPERATURE
    fields: tuple[str, ...] = ("text",)
    language: Literal["zh", "en"] = "zh"
    rank: bool = True  # False = the greedy baseline: words in text order, no ranking queries
    seed: int = 0
    max_drift: float | None = None  # candidates whose texts drift further from the originals are not queried

    def __post_init__(self) -> None:
        check_search_values(self)

    @property
    def max_rate(self) -> float:
        return max(self.rates)


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


def rank_words(first: Judgement, words: Sequence[_Word], deleted: Sequence[Judgement | None]
               ) -> tuple[list[_Word], list[dict[str, Any]]]:
    """Words with a positive importance (the confidence drop when deleted), highest first, and every scored
    word's importance record (words the budget did not cover are left out)."""
    scored = [(first.confidence - j.confidence, w) for w, j in zip(words, deleted, strict=True) if j is not None]
    ranked = sorted(scored, key=lambda sw: -sw[0])  # stable: ties keep text order
    order = [w for score, w in ranked if score > 0]
    importance = [{"field": w.field, "word": w.span.text, "start": w.span.start, "score": round(s, 6)}
                  for s, w in ranked]
    return order, importance


def attack_example(
    example: Example,
    classifier: LabelClassifier,
    methods: Sequence[Perturbation],
    config: WordImportanceConfig,
    *,
    protect: Protection,
    drift: DriftMeter | None = None,
) -> dict[str, Any]:
    """Attack one example; returns a JSON-ready record (see the module docstring for the algorithm).

    ``drift`` measures the adversarial texts against the originals (the record's ``drift``; None without a
    meter: a bare call, such as the benchmark's, measures nothing it did not ask for) and is the measure
    ``config.max_drift`` bounds (a meter of the default measure when none is given)."""
    fields_all = example_fields(example)
    # "text", "premise" and "question" all name the question; attack it once, as "text".
    names = list(dict.fromkeys("text" if f in ("premise", "question") else f for f in config.fields))
    originals = {name: fields_all[name] for name in names if fields_all.get(name)}
    if not originals:
        raise UserError(f"example {example.id}: none of the fields {', '.join(config.fields)} has text")
    base = {k: v for k, v in fields_all.items() if k not in originals}
    if "text" in originals:
        base.pop("premise", None)
    oracle = _Oracle(classifier, example.answer, base, budget=config.budget, confidence=config.confidence,
                     n_samples=config.n_samples, temperature=config.temperature, seed=config.seed)
    state = _State(originals, spans={name: segment_words(text, config.language) for name, text in originals.items()})

    def ask(texts: Sequence[Mapping[str, str]]) -> list[Judgement | None]:
        return oracle.judge([{**t, "premise": t["text"]} if "text" in t else dict(t) for t in texts])

    record: dict[str, Any] = {
        "id": example.id,
        "label": example.answer,
        "original": dict(originals),
        "methods": [m.name for m in methods],
    }
    from robusteval.analysis.drift import DriftMeter, join_fields

    gate = drift if drift is not None or config.max_drift is None else DriftMeter()
    # One text per example: every attacked field, so a multi-field example gets one drift number.
    joined = join_fields(originals, originals)
    n_drift_rejected = 0
    first = ask([originals])[0]
    if first is None:
        raise UserError("the query budget is smaller than the cost of one query")
    record["original_label"] = first.label
    if first.label != example.answer:
        return {**record, "status": "skipped", "skip_reason": ORIGINAL_WRONG, "queries": oracle.queries,
                "n_words": 0, "drift": None, "n_drift_rejected": 0}

    protected = {name: protect.mask(text) for name, text in originals.items()}
    words = [
        _Word(name, i, span)
        for name, spans in state.spans.items()
        for i, span in enumerate(spans)
        if is_word(span) and not any(protected[name][span.start : span.end])
    ]
    n_words = sum(1 for spans in state.spans.values() for span in spans if is_word(span))
    allowance = word_allowance(config.max_rate, n_words)
    if config.rank:
        order, importance = rank_words(first, words, ask([state.render(delete=w) for w in words]))
    else:
        order, importance = list(words), []
    accept_queries = [oracle.queries]  # queries spent when the m-th word had been perturbed
    confidence = first.confidence
    status = "exhausted"
    final_label: str | None = first.label
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
            rng = derive_random(config.seed, "wordimportance-candidates", method.name, example.id, word.field,
                                word.index)
            for candidate in method.candidates(text, span, rng):
                if candidate not in seen:
                    seen.add(candidate)
                    options.append((candidate, method.name))
        if options and config.max_drift is not None and gate is not None:
            values = gate.drifts([joined] * len(options),
                                 [join_fields(state.render((word, c)), originals) for c, _ in options])
            kept = [option for option, value in zip(options, values, strict=True) if value <= config.max_drift]
            n_drift_rejected += len(options) - len(kept)  # never queried: they cost no budget
            options = kept
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
            chosen = judged[k]
            assert chosen is not None  # ``scored`` holds judged candidates only
            final_label = chosen.label
            if not not_flipped:
                status = "success"
                break
        if len(scored) < len(judged):
            status = "budget"
            break
    n_perturbed = len(state.replacements)
    success = status == "success"
    adversarial = state.render()
    return {
        **record,
        "status": "success" if success else "failed",
        "stop_reason": status,
        "adversarial": adversarial,
        "edits": state.edits(),
        "final_label": final_label,
        "final_confidence": confidence,
        "queries": oracle.queries,
        "n_words": n_words,
        "perturbed_words": n_perturbed,
        "perturbed_rate": n_perturbed / n_words if n_words else 0.0,
        "importance": importance,
        "per_rate": per_rate_outcomes(config.rates, n_words=n_words, n_perturbed=n_perturbed, success=success,
                                      accept_queries=accept_queries, queries=oracle.queries),
        "drift": drift.measure([joined], [join_fields(adversarial, originals)])[0] if drift is not None else None,
        "n_drift_rejected": n_drift_rejected,
    }
