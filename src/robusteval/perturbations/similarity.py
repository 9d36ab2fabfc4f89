"""``min_similarity``: meaning-preserving perturbations. A candidate text whose similarity to the original is
below the minimum is refused: a back-translation falls back to the original, a masked-LM substitution to the
word's next candidate.

The measure depends on the language: English texts use the cosine of all-MiniLM-L6-v2 sentence embeddings
(the ``drift`` extra's model, :class:`~robusteval.analysis.drift.SentenceEmbedder`), Chinese texts chrF
(:func:`~robusteval.metrics.chrf.chrf`, no model). Every record and summary names the measure it used
("chrF (zh)"). :func:`summarise_similarity` counts what the gate did, with denominators and intervals.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from robusteval.errors import UserError
from robusteval.perturbations.base import (
    ChangeBudget,
    Edit,
    Language,
    Perturbed,
    Protection,
    SimilarityCheck,
    SpanPerturbation,
    apply_edits,
)

#: The methods the gate applies to (the others change a few characters and have no candidates to fall back on).
FILTERED_METHODS = ("S-backtranslation", "W-maskedlm")
MEASURES: dict[Language, str] = {"en": "cosine all-MiniLM-L6-v2", "zh": "chrF"}


def measure_label(language: Language) -> str:
    """What the gate measures for ``language``, as records, summaries and logs name it: "chrF (zh)"."""
    return f"{MEASURES[language]} ({language})"


def check_measure_available(language: Language) -> None:
    """Refuse English without the embedding model (a run that asked for a gate must not silently skip it)."""
    if language == "en":
        from robusteval.analysis.drift import embedding_unavailable

        reason = embedding_unavailable()
        if reason is not None:
            raise UserError(f"min_similarity on English texts measures the sentence-embedding cosine: "
                            f"{reason.removeprefix('no cosine: ')}")


class SimilarityGate:
    """Scores candidates against their originals with the language's measure and keeps those >= ``minimum``."""

    def __init__(self, minimum: float, language: Language, *, device: Any = "auto") -> None:
        check_measure_available(language)
        self.minimum = float(minimum)
        self.language = language
        self.label = measure_label(language)
        self._embedder: Any = None
        if language == "en":
            from robusteval.analysis.drift import SentenceEmbedder

            self._embedder = SentenceEmbedder(device)

    def scores(self, originals: Sequence[str], candidates: Sequence[str]) -> list[float]:
        """Similarity per pair (identical texts: exactly 1.0), batched."""
        if self._embedder is not None:
            return self._embedder.cosine(originals, candidates)
        from robusteval.metrics.chrf import chrf

        return [1.0 if a == b else chrf(a, b) for a, b in zip(originals, candidates, strict=True)]

    def passes(self, value: float) -> bool:
        return value >= self.minimum

    def check(self, value: float, *, rejected: int = 0, fell_back: bool = False) -> SimilarityCheck:
        return SimilarityCheck(self.label, self.minimum, value, rejected, fell_back)


def gated_perturb(method: SpanPerturbation, text: str, *, budget: ChangeBudget, rng: random.Random,
                  protect: Protection, gate: SimilarityGate) -> Perturbed:
    """:meth:`SpanPerturbation.perturb` with every substitution gated: the whole text with the substitution (and
    those already made) must stay >= ``gate.minimum`` similar to the original, else the word's next candidate is
    tried (the random pick first, then the method's order); a word none passes is skipped for the next one.

    ``rng`` is consumed as the base consumes it, so when every pick passes the result is the ungated one.
    """
    protected = protect.mask(text)
    eligible = [span for span in method.units(text) if not any(protected[span.start : span.end])]
    rng.shuffle(eligible)
    wanted = budget.count(len(eligible))
    edits: list[Edit] = []
    rejected = 0
    value = 1.0
    for span in eligible:
        if len(edits) >= wanted:
            break
        options = method.candidates(text, span, rng)
        if not options:
            continue
        first = rng.choice(options)
        order = [first, *(option for option in options if option != first)]
        trials = [[*edits, Edit(span.start, span.end, span.text, option)] for option in order]
        scores = gate.scores([text] * len(trials), [apply_edits(text, trial) for trial in trials])
        for trial, score in zip(trials, scores, strict=True):
            if gate.passes(score):
                edits, value = trial, score
                break
            rejected += 1
    check = gate.check(value, rejected=rejected, fell_back=not edits and rejected > 0)
    return Perturbed(text, apply_edits(text, edits), tuple(sorted(edits, key=lambda e: e.start)), method.name,
                     similarity=check)


def summarise_similarity(blocks: Iterable[Mapping[str, Any]], *, minimum: float, measure: str) -> dict[str, Any]:
    """What the gate did over perturbed fields (the records' per-field blocks; those without a ``similarity``
    entry were not gated and are left out): n texts measured, candidates rejected, the texts that fell back
    to the original and the share kept, each share with its n and Wilson interval."""
    from robusteval.metrics.drift import describe
    from robusteval.metrics.stats import proportion

    checks = [block["similarity"] for block in blocks if isinstance(block.get("similarity"), Mapping)]
    values = [float(check["value"]) for check in checks]
    n = len(checks)
    fell_back = sum(1 for check in checks if check.get("fell_back"))
    return {
        "measure": measure,
        "min": minimum,
        "n": n,
        "rejected": sum(int(check.get("rejected") or 0) for check in checks),
        "fell_back": proportion(fell_back, n),
        "kept": proportion(n - fell_back, n),
        # The returned texts' similarity (1.0 for an original kept); for a similarity the worst case is the lowest.
        "value": {**{k: v for k, v in describe(values).items() if k != "max"}, "min": min(values, default=None)},
    }


def similarity_line(summary: Mapping[str, Any]) -> str:
    """One line for the terminal and run.log: ``similarity: chrF (zh) >= 0.5: 18/20 kept (0.900 [...]), ..."""
    from robusteval.metrics.formatting import format_rate

    kept, fell = summary["kept"], summary["fell_back"]
    return (f"similarity: {summary['measure']} >= {summary['min']:g}: {kept['k']}/{kept['n']} texts kept "
            f"({format_rate(kept['value'], kept['ci95'])}), {fell['k']} fell back to the original, "
            f"{summary['rejected']} candidates rejected")
