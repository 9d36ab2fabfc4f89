"""S-backtranslation: translate a text into a pivot language and back with a model, keep what comes back.

The translator is any :class:`~robusteval.models.base.Backend` (the ``translator`` model role). Each
non-blank line is translated on its own with :data:`TRANSLATE_TEMPLATE` (``str.format`` with ``source``,
``target`` and ``text``), greedily, cut at the first newline; blank lines and the whitespace around each line
stay as they were. :meth:`BackTranslation.perturb_batch` sends every line of every text in one ``generate``
call per direction.

The back-translation is rejected, and the text returned unchanged with no edits, when a line comes back
empty or runs into the token limit (truncated or rambling), when the result is identical or not in the text's language, or when
protected text did not survive: every number (compared after
NFKC, without thousands separators or trailing punctuation), placeholder and protected word of the original
must be in the result, and the result may not bring numbers of its own. With a ``min_similarity``
gate (:mod:`robusteval.perturbations.similarity`), a back-translation less similar to the original than the
minimum is rejected too ("similarity"): decoding is greedy, so there is one candidate and the original is
kept. The reason is the
``Perturbed.note`` of that text and is also counted in :attr:`BackTranslation.rejections`. A change is one edit over the whole
text.

Pivot: ``pivot_language`` (a name such as "German", or a code such as "de"); when it names the text's own
language (the registry's default is English), Chinese texts pivot through English and English texts through
Chinese, so one zh<->en translator serves both.
"""

from __future__ import annotations

import logging
import random
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from robusteval.errors import UserError
from robusteval.perturbations.base import (
    ChangeBudget,
    Edit,
    Language,
    Level,
    Perturbation,
    Perturbed,
    Protection,
    Span,
    detect_language,
)
from robusteval.perturbations.registry import MethodOptions, register_perturbation
from robusteval.perturbations.similarity import SimilarityGate

if TYPE_CHECKING:  # the models are imported when a translation runs: listing the methods stays light
    from robusteval.models.base import Backend, GenerationRequest

log = logging.getLogger(__name__)

METHOD = "S-backtranslation"
TRANSLATE_TEMPLATE = (
    "Translate the following {source} text into {target}. Reply with the translation only, on one line.\n\n"
    "{source}: {text}\n"
    "{target}:"
)
LANGUAGE_NAMES: dict[str, str] = {
    "zh": "Chinese", "en": "English", "de": "German", "fr": "French", "es": "Spanish", "ja": "Japanese",
    "ko": "Korean", "ru": "Russian", "it": "Italian", "pt": "Portuguese", "ar": "Arabic",
}
DEFAULT_PIVOT: dict[Language, str] = {"zh": "English", "en": "Chinese"}
_FIELDS = {"source", "target", "text"}
_QUOTES = (('"', '"'), ("“", "”"), ("「", "」"), ("『", "』"), ("'", "'"))
_TRAILING = ".,:/。，、"
_NO_EXTRA_PROTECTION = Protection()


def language_name(code_or_name: str) -> str:
    """"de" -> "German"; a name (or an unknown code) is used as given."""
    return LANGUAGE_NAMES.get(code_or_name.strip().lower(), code_or_name.strip())


def check_template(template: str, *, option: str = "translate_template") -> str:
    """A ``str.format`` template that uses ``{text}`` and only ``{source}``, ``{target}``, ``{text}``."""
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise UserError(f"{METHOD}: the {option} option is not a valid format string ({exc})") from None
    unknown = fields - _FIELDS
    if unknown or "text" not in fields:
        raise UserError(f"{METHOD}: the {option} option must contain {{text}} and may use only {{source}}, "
                        f"{{target}} and {{text}}; it has {sorted(fields)}")
    return template


def clean_translation(output: str, target: str, source_line: str) -> str:
    """The first line of a model's answer, without an echoed ``Target:`` label or quotes it added."""
    lines = output.strip().splitlines()
    text = lines[0].strip() if lines else ""
    label = f"{target}:"
    if text.lower().startswith(label.lower()):
        text = text[len(label) :].strip()
    for left, right in _QUOTES:
        wrapped = len(text) >= 2 and text.startswith(left) and text.endswith(right)
        if wrapped and not (source_line.startswith(left) and source_line.endswith(right)):
            text = text[len(left) : -len(right)].strip()
            break
    return text


def protected_pieces(text: str, protect: Protection) -> Counter[str]:
    """Each maximal protected run of ``text`` (numbers, placeholders, protected words), normalised."""
    mask = protect.mask(text)
    pieces: Counter[str] = Counter()
    i = 0
    while i < len(text):
        if not mask[i]:
            i += 1
            continue
        j = i
        while j < len(text) and mask[j]:
            j += 1
        piece = unicodedata.normalize("NFKC", text[i:j]).strip().rstrip(_TRAILING)
        if any(char.isdigit() for char in piece):
            piece = re.sub(r"(?<=\d),(?=\d)", "", piece)
        if piece:
            pieces[piece] += 1
        i = j
    return pieces


def lost_protection(original: str, result: str, protect: Protection) -> str | None:
    """Why ``result`` may not replace ``original`` (protected text lost or numbers added), or None."""
    before, after = protected_pieces(original, protect), protected_pieces(result, protect)
    missing = before - after
    if missing:
        return f"lost {sorted(missing)}"
    added = [piece for piece in after - before if any(char.isdigit() for char in piece)]
    if protect.digits and added:
        return f"added numbers {sorted(added)}"
    return None


@dataclass
class BackTranslation:
    """Round trip through ``pivot`` with ``translator``; results are cached per text (greedy, deterministic)."""

    name: ClassVar[str] = METHOD
    level: ClassVar[Level] = "sentence"
    language: ClassVar[Language] = "zh"
    translator: Backend
    pivot: str = ""
    template: str = TRANSLATE_TEMPLATE
    max_new_tokens: int | None = None
    chat: bool = True
    #: Rejects back-translations below its minimum similarity to the original (None: no gate).
    gate: SimilarityGate | None = None
    #: How often a text came back unchanged, by reason: "empty", "truncated", "identical", "wrong-language",
    #: "protected", "similarity".
    rejections: Counter[str] = field(default_factory=Counter)
    #: text -> (back-translation, None) or ("", why it failed); protection is checked per call.
    _cache: dict[str, tuple[str, str | None]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        own = LANGUAGE_NAMES[self.language]
        pivot = language_name(self.pivot) if self.pivot else ""
        if not pivot or pivot.lower() == own.lower():
            pivot = DEFAULT_PIVOT[self.language]
        self.pivot = pivot
        check_template(self.template)

    # ------------------------------------------------------------------ the interface
    def candidates(self, text: str, span: Span, rng: random.Random) -> list[str]:
        """Sentence-level: nothing to offer for one span (attacks do not use this method)."""
        return []

    def perturb(
        self,
        text: str,
        *,
        budget: ChangeBudget | None = None,
        rng: random.Random,
        protect: Protection = _NO_EXTRA_PROTECTION,
    ) -> Perturbed:
        """The back-translation of ``text`` (``budget`` does not apply: the whole text is one unit)."""
        return self.perturb_batch([text], budget=budget, rngs=[rng], protect=protect)[0]

    def perturb_batch(
        self,
        texts: Sequence[str],
        *,
        budget: ChangeBudget | None = None,
        rngs: Sequence[random.Random] | None = None,
        protect: Protection = _NO_EXTRA_PROTECTION,
    ) -> list[Perturbed]:
        """Back-translations of ``texts``: one ``generate`` call into the pivot and one back, for all of them.

        Decoding is greedy, so ``rngs`` are accepted for the interface and left untouched.
        """
        if rngs is not None and len(rngs) != len(texts):
            raise ValueError(f"perturb_batch got {len(texts)} texts but {len(rngs)} random generators")
        self._translate([text for text in dict.fromkeys(texts) if text not in self._cache])
        reasons = [self._reason(text, protect) for text in texts]
        scores: dict[str, float] = {}
        if self.gate is not None:  # one batched measurement for every candidate that passed the other checks
            todo = list(dict.fromkeys(text for text, reason in zip(texts, reasons, strict=True) if reason is None))
            scores = dict(zip(todo, self.gate.scores(todo, [self._cache[text][0] for text in todo]), strict=True))
        return [self._outcome(text, reason, scores.get(text)) for text, reason in zip(texts, reasons, strict=True)]

    # ------------------------------------------------------------------ translation
    def _requests(self, lines: Sequence[str], source: str, target: str) -> list[GenerationRequest]:
        from robusteval.models.base import GenerationRequest

        return [
            GenerationRequest(
                self.template.format(source=source, target=target, text=line),
                max_new_tokens=self.max_new_tokens or min(2048, 32 + 2 * len(line)),
                temperature=0.0,
                stop=("\n",),
                chat=self.chat,
            )
            for line in lines
        ]

    def _round_trip(self, lines: list[str]) -> dict[str, tuple[str, str | None]]:
        """``line -> (back-translation, None)`` or ``("", reason)``; two generate calls for all lines.

        An answer that ran into ``max_new_tokens`` (no newline, no end of text) is "truncated": a translation
        cut short, or a model rambling on, is no paraphrase.
        """
        own = LANGUAGE_NAMES[self.language]
        there = self.translator.generate(self._requests(lines, own, self.pivot))
        back: dict[str, tuple[str, str | None]] = {}
        pivots: dict[str, str] = {}
        for line, generation in zip(lines, there, strict=True):
            pivot = clean_translation(generation.text, self.pivot, line)
            if generation.finish_reason == "length":
                back[line] = ("", "truncated")
            elif not pivot:
                back[line] = ("", "empty")
            else:
                pivots[line] = pivot
        if pivots:
            ready = list(pivots)
            answers = self.translator.generate(self._requests([pivots[line] for line in ready], self.pivot, own))
            for line, generation in zip(ready, answers, strict=True):
                result = clean_translation(generation.text, own, pivots[line])
                if generation.finish_reason == "length":
                    back[line] = ("", "truncated")
                else:
                    back[line] = (result, None if result else "empty")
        return back

    def _translate(self, texts: list[str]) -> None:
        """Fill the cache for ``texts``: each non-blank line translated, the layout around it kept."""
        for text in texts:
            if not text.strip():
                self._cache[text] = ("", "empty")
        texts = [text for text in texts if text.strip()]
        if not texts:
            return
        lines = list(dict.fromkeys(line.strip() for text in texts for line in text.split("\n") if line.strip()))
        back = self._round_trip(lines)
        for text in texts:
            parts: list[str] = []
            failure: str | None = None
            for line in text.split("\n"):
                core = line.strip()
                if not core:
                    parts.append(line)
                    continue
                result, failure = back[core]
                if failure:
                    break
                start = line.index(core)
                parts.append(line[:start] + result + line[start + len(core) :])
            self._cache[text] = ("", failure) if failure else ("\n".join(parts), None)

    def _reason(self, text: str, protect: Protection) -> str | None:
        """Why the cached back-translation of ``text`` may not replace it (before the similarity gate), or None."""
        result, reason = self._cache[text]
        if reason is None and result == text:
            reason = "identical"
        if reason is None and detect_language(result) != detect_language(text):
            reason = "wrong-language"  # the translator answered in the pivot (or another) language
        if reason is None:
            lost = lost_protection(text, result, protect)
            if lost:
                reason = "protected"
                log.debug("%s rejected %r -> %r: %s", METHOD, text, result, lost)
        return reason

    def _outcome(self, text: str, reason: str | None, score: float | None) -> Perturbed:
        """The result for ``text``; ``score``: the gate's similarity of its back-translation (None: not measured)."""
        result = self._cache[text][0]
        note = None if reason is None else f"back-translation rejected: {reason}"
        check = None
        if self.gate is not None and score is not None:
            if not self.gate.passes(score):
                reason = "similarity"
                note = f"back-translation rejected: similarity {score:.3f} < {self.gate.minimum:g} ({self.gate.label})"
            check = self.gate.check(score if reason is None else 1.0, rejected=int(reason is not None),
                                    fell_back=reason is not None)
        if reason is not None:
            self.rejections[reason] += 1
            return Perturbed(text, text, (), METHOD, note=note, similarity=check)
        return Perturbed(text, result, (Edit(0, len(text), text, result),), METHOD, similarity=check)


class ZhBackTranslation(BackTranslation):
    language: ClassVar[Language] = "zh"


class EnBackTranslation(BackTranslation):
    language: ClassVar[Language] = "en"


def _build(cls: type[BackTranslation], options: MethodOptions) -> Perturbation:
    from robusteval.models.base import Backend

    translator: Any = options.translator
    if translator is None:
        raise UserError(f"{METHOD} needs a translator: set the translator option to a model backend "
                        "(e.g. an hf: or openai: model spec)")
    if isinstance(translator, str):
        from robusteval.models import load_backend

        translator = load_backend(translator, device=options.device)
    if not isinstance(translator, Backend):
        raise UserError(f"{METHOD}: the translator option must be a model backend or spec, "
                        f"got {type(translator).__name__}")
    extra = options.extra
    max_new = extra.get("max_new_tokens")
    return cls(
        translator=translator,
        pivot=options.pivot_language,
        template=check_template(str(extra.get("translate_template", TRANSLATE_TEMPLATE))),
        max_new_tokens=int(max_new) if max_new else None,
        chat=bool(extra.get("chat", True)),
    )


@register_perturbation(METHOD, language="zh", level="sentence", extra="",
                       summary="round trip through a pivot language with a translator model")
def build_zh(options: MethodOptions) -> Perturbation:
    return _build(ZhBackTranslation, options)


@register_perturbation(METHOD, language="en", level="sentence", extra="",
                       summary="round trip through a pivot language with a translator model")
def build_en(options: MethodOptions) -> Perturbation:
    return _build(EnBackTranslation, options)
