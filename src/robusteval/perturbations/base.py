"""The one small interface every perturbation implements, and the shared machinery around it.

A perturbation does two things (TextAttack calls this a *transformation*):

* ``candidates(text, span, rng)``: replacements for one character or word span, in a deterministic
  order. Attacks query these one by one and keep the best (see :mod:`robusteval.attacks.wordimportance`).
* ``perturb(text, rate=..., rng=...)``: a whole noisy copy of ``text`` with a record of every edit, for
  perturbed datasets. :class:`SpanPerturbation` implements it once from ``units`` + ``candidates``.

Every choice is drawn from the ``random.Random`` passed in, so a seed fixes the output. Digits, named
placeholders and protected words (label words, by default nothing else) are never touched.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from robusteval.perturbations.segment import Language, Span, segment_words

Level = Literal["char", "word", "sentence"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# {name}, {{name}}, <name>, [MASK]-style slots and $var: template placeholders keep their meaning only verbatim.
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}|\{[^{}]*\}|<[A-Za-z_][\w-]*>|\[[A-Z_]+\]|\$[A-Za-z_]\w*")
# A number with its separators and signs: "3", "-2.5", "1,000", "3/4", "50%".
_NUMBER = re.compile(r"[-+]?\d[\d,.:/]*%?")


@dataclass(frozen=True)
class Edit:
    """``original`` at ``text[start:end]`` of the *original* text became ``replacement``."""

    start: int
    end: int
    original: str
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "original": self.original, "replacement": self.replacement}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        return cls(int(data["start"]), int(data["end"]), str(data["original"]), str(data["replacement"]))


@dataclass(frozen=True)
class SimilarityCheck:
    """What the ``min_similarity`` gate saw for one text (see :mod:`robusteval.perturbations.similarity`).

    ``value``: the similarity of the returned text to the original (1.0 when the original was kept);
    ``rejected``: candidates refused for falling below ``minimum``; ``fell_back``: the original was kept
    because every candidate was refused.
    """

    measure: str  # e.g. "chrF (zh)"
    minimum: float
    value: float
    rejected: int = 0
    fell_back: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "min": self.minimum, "value": self.value, "rejected": self.rejected,
                "fell_back": self.fell_back}


@dataclass(frozen=True)
class Perturbed:
    """A perturbed text and exactly what changed."""

    original: str
    text: str
    edits: tuple[Edit, ...]
    method: str
    #: Why a method left the text unchanged when it could not help it (e.g. a rejected back-translation).
    note: str | None = None
    #: The similarity gate's view of this text; None when no ``min_similarity`` was set.
    similarity: SimilarityCheck | None = None

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "edits": [edit.to_dict() for edit in self.edits]}
        if self.note:
            out["note"] = self.note
        if self.similarity is not None:
            out["similarity"] = self.similarity.to_dict()
        return out


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (offsets into ``text``); raises ValueError on overlap or mismatch."""
    out: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        if text[edit.start : edit.end] != edit.original:
            raise ValueError(f"edit expects {edit.original!r} at {edit.start}, text has {text[edit.start:edit.end]!r}")
        out.append(text[cursor : edit.start])
        out.append(edit.replacement)
        cursor = edit.end
    out.append(text[cursor:])
    return "".join(out)


@dataclass(frozen=True)
class Protection:
    """What must never change. Digits and placeholders by default; ``words`` adds e.g. label words."""

    digits: bool = True
    placeholders: bool = True
    words: frozenset[str] = frozenset()

    def mask(self, text: str) -> list[bool]:
        """``mask[i]`` is True when character ``i`` of ``text`` is protected."""
        protected = [False] * len(text)
        patterns: list[re.Pattern[str]] = []
        if self.digits:
            patterns.append(_NUMBER)
        if self.placeholders:
            patterns.append(_PLACEHOLDER)
        for pattern in patterns:
            for match in pattern.finditer(text):
                protected[match.start() : match.end()] = [True] * (match.end() - match.start())
        for word in self.words:
            if not word:
                continue
            start = text.find(word)
            while start != -1:
                protected[start : start + len(word)] = [True] * len(word)
                start = text.find(word, start + 1)
        if self.digits:  # any other Unicode digit (full-width, Arabic-Indic, …)
            for i, char in enumerate(text):
                if char.isdigit():
                    protected[i] = True
        return protected


#: Digits and placeholders only: the default of every ``perturb``.
DEFAULT_PROTECTION = Protection()


def is_cjk(char: str) -> bool:
    return bool(_CJK.fullmatch(char))


def detect_language(text: str) -> Language:
    """"zh" when at least a fifth of the letters are CJK ideographs, else "en"."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "en"
    return "zh" if sum(1 for c in letters if is_cjk(c)) * 5 >= len(letters) else "en"


@dataclass(frozen=True)
class ChangeBudget:
    """How many units ``perturb`` changes: ``round(rate × eligible units)`` clamped to [minimum, maximum].

    Character-level methods default to the perturbed-benchmark convention of 3–15 changed characters per text.
    """

    rate: float = 0.1
    minimum: int = 0
    maximum: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within [0, 1], got {self.rate}")
        if self.minimum < 0 or (self.maximum is not None and self.maximum < self.minimum):
            raise ValueError(f"change budget needs 0 <= minimum <= maximum, got {self.minimum}..{self.maximum}")

    def count(self, eligible: int) -> int:
        wanted = max(self.minimum, round(self.rate * eligible))
        if self.maximum is not None:
            wanted = min(wanted, self.maximum)
        return min(wanted, eligible)


#: The benchmark convention for character-level methods: 3-15 changed characters per text.
CHAR_BUDGET = ChangeBudget(rate=0.1, minimum=3, maximum=15)
#: Word-level methods: about one word in seven, at least one.
WORD_BUDGET = ChangeBudget(rate=0.15, minimum=1)


@runtime_checkable
class Perturbation(Protocol):
    """Anything that proposes replacements for a span and perturbs whole texts."""

    # Read-only members: a method declares them as class variables (SpanPerturbation), or as plain attributes.
    @property
    def name(self) -> str:
        """The method name, e.g. "C-homophone"."""
        ...

    @property
    def level(self) -> Level: ...

    @property
    def language(self) -> Language: ...

    def candidates(self, text: str, span: Span, rng: random.Random) -> list[str]:
        """Replacements for ``span`` (never ``span.text`` itself), in a deterministic order for a given rng."""
        ...

    def perturb(self, text: str, *, budget: ChangeBudget, rng: random.Random, protect: Protection) -> Perturbed:
        """A perturbed copy of ``text`` that changes about ``budget`` units."""
        ...


@dataclass
class SpanPerturbation:
    """Base for character- and word-level methods: subclasses give ``candidates`` (and maybe ``units``).

    ``perturb`` picks ``budget.count(n)`` random eligible units (unprotected, with at least one candidate)
    and replaces each with a random candidate. Character-level methods also answer ``candidates`` for a
    *word* span (the attack perturbs words): the default transforms each character of the word in turn.
    """

    name: ClassVar[str] = ""
    level: ClassVar[Level] = "char"
    language: ClassVar[Language] = "zh"
    default_budget: ClassVar[ChangeBudget] = ChangeBudget(rate=0.1)
    #: Upper bound on candidates returned per span (attacks query each one).
    max_candidates: int = 10
    #: A :class:`~robusteval.perturbations.similarity.SimilarityGate` that ``perturb`` passes every substitution
    #: through (``min_similarity``; set by ``build_perturbation`` for word-level methods). None: no gate.
    gate: Any = None
    #: A constraint every candidate must pass (``keep_pos``: :class:`~robusteval.perturbations.constraints.
    #: PartOfSpeech`, set by ``build_perturbation`` for word-level methods). None: no constraint.
    constraint: Any = None

    # -- what subclasses implement ---------------------------------------------------------------
    def char_candidates(self, char: str) -> Sequence[str]:
        """Replacements for one character (character-level methods)."""
        raise NotImplementedError

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        """Replacements for one word; character-level methods default to one changed character per candidate."""
        out: list[str] = []
        for i, char in enumerate(word):
            for replacement in self.char_candidates(char):
                out.append(word[:i] + replacement + word[i + 1 :])
        return out

    # -- the interface ---------------------------------------------------------------------------
    def units(self, text: str) -> list[Span]:
        """The spans ``perturb`` may change: characters for char level, words for word level."""
        if self.level == "char":
            return [Span(i, i + 1, c) for i, c in enumerate(text) if not c.isspace()]
        return segment_words(text, self.language)

    def candidates(self, text: str, span: Span, rng: random.Random) -> list[str]:
        if self.level == "char" and span.end - span.start == 1:
            found: Sequence[str] = self.char_candidates(span.text)
        else:
            found = self.word_candidates(span.text, text, span, rng)
        options = distinct(found, exclude=span.text)
        if self.constraint is not None:  # before the cap: a refused candidate leaves room for the next one
            options = self.constraint.filter(text, span, options)
        return options[: self.max_candidates]

    def perturb(
        self,
        text: str,
        *,
        budget: ChangeBudget | None = None,
        rng: random.Random,
        protect: Protection = DEFAULT_PROTECTION,
    ) -> Perturbed:
        budget = budget or self.default_budget
        if self.gate is not None:  # the gate drives the loop (base may not import similarity: a cycle)
            result: Perturbed = self.gate.perturb(self, text, budget=budget, rng=rng, protect=protect)
            return result
        protected = protect.mask(text)
        eligible = [span for span in self.units(text) if not any(protected[span.start : span.end])]
        # Shuffle first, then take the first units that have candidates: no work for units never used.
        rng.shuffle(eligible)
        wanted = budget.count(len(eligible))
        edits: list[Edit] = []
        for span in eligible:
            if len(edits) >= wanted:
                break
            options = self.candidates(text, span, rng)
            if options:
                edits.append(Edit(span.start, span.end, span.text, rng.choice(options)))
        return Perturbed(text, apply_edits(text, edits), tuple(sorted(edits, key=lambda e: e.start)), self.name)


def distinct(items: Iterable[str], *, exclude: str) -> list[str]:
    """The non-empty items, each once in first-seen order, without ``exclude`` (the unit's own text)."""
    seen = {exclude}
    out = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out
