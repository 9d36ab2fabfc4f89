"""English word-level noise: ``W-synonym``, a word replaced by a WordNet 3.0 synonym.

Which synonyms, and why:

* senses in WordNet's frequency order, and only the common ones (SemCor-tagged at least a quarter as often
  as the word's commonest sense; the first sense when none is tagged): rare senses give nonsense ("take"
  -> "film", "mark" -> "chump");
* synonyms SemCor has seen in that sense ("kid", "automobile") over never-seen ones ("shaver", "tyke"),
  which are used only when nothing else exists, and then only if WordNet's familiarity measure (polysemy)
  says they are not rare words ("hebdomad", "volaille" have one sense);
* one part of speech, told cheaply: the word's tagged frequency per part of speech, overridden by the word
  before it ("the"/"his"/"of" -> not a verb; "to"/"will"/"she" -> a verb first);
* single words in lower case (no "monetary_value", no proper nouns, no "mi"), never a stop word or a
  quantity word ("half", "dozen", "times", "left": a maths question would change its answer);
* the original's inflection is put back on the synonym ("bought" -> "purchased", "children" -> "kids"), from
  WordNet's exception lists where the synonym is irregular and by rule otherwise; a synonym whose form is
  uncertain ("took" or "taken"? "stoped" or "stopped"?) is left out;
* capitalisation as the original; names are left alone (capitalised mid-sentence, a WordNet proper noun
  like "Mark", or capitalised elsewhere in the text).

Senses are chosen without the sentence's meaning, so WordNet's own oddities remain ("forgot" -> "buried",
"born" -> "endured" through "bear"): this is the classic WordNet swap (as in TextAttack), made safer.

Each word's analysis is cached (``lru_cache``), so perturbing a dataset looks each word up once.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from robusteval.perturbations.base import (
    WORD_BUDGET,
    ChangeBudget,
    Language,
    Level,
    Perturbation,
    Span,
    SpanPerturbation,
)
from robusteval.perturbations.en_char import letter_words
from robusteval.perturbations.en_resources import (
    QUANTITY_WORDS,
    STOP_WORDS,
    SemcorCounts,
    semcor_counts,
    synset_words,
    wordnet,
)
from robusteval.perturbations.registry import MethodOptions, register_perturbation

#: A sense is kept when tagged at least this share as often as the word's commonest sense.
SENSE_SHARE = 0.25
#: An inflected form that is also a lemma ("days", "found") is read as that lemma only when tagged at least
#: this share as often as the lemma it inflects.
BASE_SHARE = 0.2
_SKIP = STOP_WORDS | QUANTITY_WORDS
_POSSESSIVE = ("'s", "’s")
_PREVIOUS_WORD = re.compile(r"([A-Za-z']+)[ \t]*$")
_SENTENCE_END = ".!?\n\"“‘'([:;"
#: After these the word is not a verb ("the run", "his fast").
_NOT_VERB_AFTER = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their",
    "some", "any", "each", "every", "no", "many", "several", "few", "much", "more", "most", "another",
    "either", "neither",
})
#: After a preposition only a gerund is a verb ("pairs of pants", but "instead of buying").
_PREPOSITIONS = frozenset({
    "of", "in", "on", "at", "for", "with", "from", "by", "about", "into", "onto", "per", "than", "over",
    "under", "after", "before", "between", "during", "without", "through", "across", "like",
})
#: After these a verb is the likelier reading ("to buy", "she buys", "will run").
_VERB_AFTER = frozenset({
    "to", "will", "would", "can", "could", "should", "must", "may", "might", "shall", "do", "does", "did",
    "don't", "doesn't", "didn't", "won't", "can't", "cannot", "i", "you", "he", "she", "it", "we", "they",
})
_VOWELS = frozenset("aeiou")
_CVC = re.compile(r"(?:^|[^aeiou])[aeiou][^aeiouwxy]$")
#: Noun endings whose plural is often irregular (leaf/leaves, cactus/cacti, analysis/analyses).
_IRREGULAR_PLURAL_ENDINGS = ("f", "fe", "us", "is", "um", "on", "man", "ex", "ix")


@dataclass(frozen=True)
class _PosSynonyms:
    """The synonyms of one word for one part of speech, already inflected like the word."""

    pos: str
    tagged: int  # SemCor count of the word's senses for this part of speech (how common this reading is)
    senses: int
    synonyms: tuple[str, ...]


@lru_cache(maxsize=1)
def _reverse_exceptions() -> dict[str, dict[str, tuple[str, ...]]]:
    """pos -> base -> its irregular forms, from WordNet's ``*.exc`` lists ("buy" -> ("bought",))."""
    reader = wordnet()
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for pos in ("n", "v"):
        forms: dict[str, list[str]] = {}
        for inflected, bases in reader._exception_map[pos].items():
            for base in bases:
                forms.setdefault(base, []).append(inflected)
        out[pos] = {base: tuple(sorted(found)) for base, found in forms.items()}
    return out


def _usable(name: str) -> bool:
    """A single lower-case ASCII word of 3+ letters that is not a stop/quantity word ("mi", "US", "one")."""
    return len(name) >= 3 and name.isalpha() and name.isascii() and name.islower() and name not in _SKIP


def _regular_s(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh", "o")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS:
        return word[:-1] + "ies"
    return word + "s"


def _monosyllable_cvc(word: str) -> bool:
    """Would double its last consonant ("stop" -> "stopped"): we cannot tell reliably, so such words are skipped."""
    return bool(_CVC.search(word)) and len(re.findall(r"[aeiouy]+", word)) == 1


def _inflect(synonym: str, pos: str, form: str) -> str | None:
    """``synonym`` (a base form) in the same ``form`` as the original word; None when unsure."""
    if form == "base":
        return synonym
    irregular = _reverse_exceptions().get(pos, {}).get(synonym, ())
    if pos == "n":  # plural
        if irregular:
            return irregular[0] if len(irregular) == 1 else None
        if synonym.endswith(_IRREGULAR_PLURAL_ENDINGS) or synonym.endswith("o"):
            return None
        return _regular_s(synonym)
    if form == "s":
        return _regular_s(synonym)
    if form == "ing":
        listed = [f for f in irregular if f.endswith("ing")]
        if listed:
            return listed[0] if len(listed) == 1 else None
        if _monosyllable_cvc(synonym):
            return None
        if synonym.endswith("ie"):
            return synonym[:-2] + "ying"
        if synonym.endswith("e") and not synonym.endswith(("ee", "oe", "ye")):
            return synonym[:-1] + "ing"
        return synonym + "ing"
    # past tense or participle
    listed = [f for f in irregular if not f.endswith(("ing", "s"))]
    if listed:
        return listed[0] if len(listed) == 1 else None  # "took"/"taken": which one is unknown
    if _monosyllable_cvc(synonym):
        return None
    if synonym.endswith("e"):
        return synonym + "d"
    if synonym.endswith("y") and len(synonym) > 1 and synonym[-2] not in _VOWELS:
        return synonym[:-1] + "ied"
    return synonym + "ed"


def _form(word: str, base: str, pos: str) -> str | None:
    """How ``word`` inflects ``base``: "base", "s", "ing", "past" (verbs), "plural" (nouns); None otherwise."""
    if word == base:
        return "base"
    if pos == "n":
        return "plural"
    if pos != "v":
        return None  # comparatives/superlatives: "faster" -> "quicker" needs spelling rules we skip
    if word.endswith("ing"):
        return "ing"
    if word.endswith("s") and (word in (base + "s", base + "es") or word == base[:-1] + "ies"):
        return "s"
    return "past"


def _base(word: str, bases: list[str], pos: str, semcor: SemcorCounts) -> str:
    """Which lemma ``word`` is: itself when it is one and not rare next to the alternative, else the
    commonest. "days" is a WordNet lemma ("in those days") but nearly always the plural of "day"; "saw"
    and "found" are verbs of their own but nearly always "see" and "find"; "lay" is both, and stays."""
    def tagged(base: str) -> int:
        return sum(semcor.by_sense.get((base, pos), {}).values())

    best = max(bases, key=tagged)
    if word in bases and tagged(word) >= BASE_SHARE * tagged(best):
        return word
    return best


@lru_cache(maxsize=1 << 16)
def _entry(word: str, one_sense: bool = False) -> tuple[_PosSynonyms, ...]:
    """The synonyms of one lower-case word per part of speech, commonest reading first; looked up once.
    ``one_sense``: from the commonest sense of each part of speech only (SemCor's most tagged one).

    Sense order and SemCor counts come from the index and ``cntlist.rev`` tables, so only the kept
    (common) senses' synsets are parsed.
    """
    reader: Any = wordnet()
    semcor = semcor_counts()
    index = reader._lemma_pos_offset_map  # lemma -> pos -> synset offsets in sense-number order
    readings = []
    for pos in ("n", "v", "a", "r"):
        bases = reader._morphy(word, pos)
        if not bases:
            continue
        base = _base(word, bases, pos, semcor)
        offsets = index.get(base, {}).get(pos, [])
        if not offsets:
            continue
        by_number = semcor.by_sense.get((base, pos), {})
        counts = [by_number.get(number, 0) for number in range(1, len(offsets) + 1)]
        top = max(counts)
        kept = [offset for offset, count in zip(offsets, counts, strict=True)
                if count >= max(1, SENSE_SHARE * top)] or offsets[:1]
        if one_sense:
            kept = [offsets[counts.index(top)]] if top else offsets[:1]
        form = _form(word, base, pos)
        synonyms: list[str] = []
        if form is not None:
            same_word = set(bases)
            counted: list[tuple[str, int, bool]] = []  # (name, SemCor count, from the commonest sense)
            for rank, offset in enumerate(kept):
                for name in synset_words(pos, offset):
                    if name.lower() == base or not _usable(name) or same_word & set(reader._morphy(name, pos)):
                        continue  # the word itself, a phrase/name/abbreviation, or another form of the word
                    counted.append((name, _sense_count(name, pos, offset, index, semcor), rank == 0))
            # Synonyms SemCor has seen ("kid", "automobile") are kept; the never-seen ones ("shaver", "tyke")
            # only when there is nothing else, and then from the commonest sense alone.
            if any(count for _, count, _ in counted):
                names = [name for name, count, _ in counted if count]
            else:  # WordNet's familiarity measure is polysemy: one-sense words are the rare ones ("hebdomad")
                names = [name for name, _, first in counted if first and len(index.get(name, {}).get(pos, ())) > 1]
            for name in names:
                inflected = _inflect(name, pos, form)
                if inflected and inflected != word and inflected not in synonyms:
                    synonyms.append(inflected)
        readings.append(_PosSynonyms(pos, sum(counts), len(offsets), tuple(synonyms)))
    readings.sort(key=lambda r: (-r.tagged, -r.senses))
    return tuple(readings)


@lru_cache(maxsize=1 << 12)
def _proper_noun(word: str) -> bool:
    """WordNet lists the capitalised word as a name ("Mark" -> Saint Mark, "Price" -> Leontyne Price)."""
    offsets = wordnet()._lemma_pos_offset_map.get(word.lower(), {}).get("n", [])
    return any(word in synset_words("n", offset) for offset in offsets)


def _sense_count(name: str, pos: str, offset: int, index: dict[str, Any], semcor: SemcorCounts) -> int:
    """SemCor count of ``name`` in the synset at ``offset``: its sense number is where the offset is in
    the word's index line."""
    offsets = index.get(name.lower(), {}).get(pos, [])
    try:
        number = offsets.index(offset) + 1
    except ValueError:
        return 0
    return semcor.by_sense.get((name.lower(), pos), {}).get(number, 0)


def _sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _split_possessive(word: str) -> tuple[str, str]:
    for suffix in _POSSESSIVE:
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)], suffix
    return word, ""


def _with_case(synonym: str, like: str) -> str:
    if like[:1].isupper():
        return synonym[:1].upper() + synonym[1:]
    return synonym


@dataclass
class WordNetSynonym(SpanPerturbation):
    """A word replaced by a WordNet synonym of its common senses, inflected and capitalised as the original."""

    name: ClassVar[str] = "W-synonym"
    level: ClassVar[Level] = "word"
    language: ClassVar[Language] = "en"
    default_budget: ClassVar[ChangeBudget] = WORD_BUDGET

    #: Synonyms of the commonest sense only (``synonym_senses="one"``, the commands' default).
    one_sense: bool = False

    def _eligible(self, text: str, span: Span) -> bool:
        """Cheap checks (no WordNet): a content word that is not a name or an acronym."""
        stem, _ = _split_possessive(span.text)
        if len(stem) < 2 or not stem.isalpha() or stem.lower() in _SKIP:
            return False
        if stem.isupper():  # "USA", "TV": acronyms
            return False
        return not (stem[0].isupper() and not _sentence_start(text, span.start))  # a name mid-sentence

    def units(self, text: str) -> list[Span]:
        return [span for span in letter_words(text) if self._eligible(text, span)]

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        if not self._eligible(text, span):
            return []
        stem, suffix = _split_possessive(word)
        if stem[0].isupper() and (_proper_noun(stem) or self._named_elsewhere(text, stem, span.start)):
            return []
        reading = self._reading(_entry(stem.lower(), self.one_sense), stem, text, span.start, possessive=bool(suffix))
        if reading is None:
            return []
        return [_with_case(synonym, stem) + suffix for synonym in reading.synonyms]

    @staticmethod
    def _named_elsewhere(text: str, word: str, start: int) -> bool:
        """A capitalised sentence-initial word that is also capitalised mid-sentence is a name ("Joy")."""
        at = text.find(word)
        while at != -1:
            before = text[at - 1] if at > 0 else " "
            after = text[at + len(word)] if at + len(word) < len(text) else " "
            if at != start and not before.isalpha() and not after.isalpha() and not _sentence_start(text, at):
                return True
            at = text.find(word, at + 1)
        return False

    @staticmethod
    def _reading(
        entries: tuple[_PosSynonyms, ...], word: str, text: str, start: int, *, possessive: bool
    ) -> _PosSynonyms | None:
        """The likeliest part of speech here: tagged frequency, then the previous word's hint."""
        readings = list(entries)
        if possessive:
            readings = [r for r in readings if r.pos == "n"]
        else:
            match = _PREVIOUS_WORD.search(text, max(0, start - 40), start)
            previous = match.group(1).lower() if match else ""
            if previous in _NOT_VERB_AFTER or (previous in _PREPOSITIONS and not word.endswith("ing")):
                readings = [r for r in readings if r.pos != "v"]
            elif previous in _VERB_AFTER:
                readings.sort(key=lambda r: r.pos != "v")  # stable: verbs first, the rest by frequency
        return readings[0] if readings else None


@register_perturbation("W-synonym", language="en", level="word", extra="en",
                       summary="a word replaced by a WordNet 3.0 synonym (common senses, same part of speech, "
                               "inflection kept)")
def _synonym(options: MethodOptions) -> Perturbation:
    return WordNetSynonym(max_candidates=options.max_candidates, one_sense=options.one_sense)
