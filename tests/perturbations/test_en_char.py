"""English character-level perturbations on real sentences and GSM8K questions: each edit is checked against
what its method promises (QWERTY neighbours by key position, same letters for swaps and shuffles, one letter
fewer for deletes), with keyboard geometry written here independently of the code under test."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator

import pytest

from helpers.shared import shared_file
from robusteval.perturbations import (
    ChangeBudget,
    Edit,
    MethodOptions,
    Protection,
    Span,
    apply_edits,
    available_methods,
    build_perturbation,
)

SENTENCES = [
    "The quick brown fox jumps over the lazy dog while the farmer watches from his porch.",
    "Natalia sold clips to her friends in April, and then she sold half as many clips in May.",
    "Weng earns money for babysitting; yesterday she just did fifty minutes of babysitting.",
    "Betty is saving money for a new wallet, and her parents decided to give her some money.",
    "James writes a letter to two different friends twice a week, and each letter has pages.",
]
LONG = " ".join(SENTENCES) * 2  # ~170 words: the 15-change cap applies

ONE_CHAR = ["C-keyboard", "C-ocr", "C-morphonym", "C-insert", "C-delete"]
METHODS = [*ONE_CHAR, "C-swap", "C-shuffle"]

# Key positions: the QWERTY rows, each row's offset ignored. A neighbour is at most one row and one column away.
ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
KEY_AT = {c: (r, i) for r, row in enumerate(ROWS) for i, c in enumerate(row)}


def near_on_keyboard(a: str, b: str) -> bool:
    (r1, c1), (r2, c2) = KEY_AT[a.lower()], KEY_AT[b.lower()]
    return a.lower() != b.lower() and abs(r1 - r2) <= 1 and abs(c1 - c2) <= 1


def gsm8k_questions(n: int) -> list[str]:
    with shared_file("gsm8k/test.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["question"] for _, line in zip(range(n), handle, strict=False)]


def perturb(method: str, text: str, seed: int = 0, **kwargs):  # type: ignore[no-untyped-def]
    return build_perturbation(method, "en").perturb(text, rng=random.Random(seed), **kwargs)


def edits_of(method: str, texts: list[str]) -> Iterator[Edit]:
    for seed, text in enumerate(texts):
        result = perturb(method, text, seed)
        assert apply_edits(text, result.edits) == result.text
        yield from result.edits


def hamming(a: str, b: str) -> int:
    return sum(x != y for x, y in zip(a, b, strict=True))


def test_registered_for_english() -> None:
    names = {m.name for m in available_methods("en") if m.level == "char"}
    assert set(METHODS) <= names
    for name in METHODS:
        method = build_perturbation(name, "en", MethodOptions(max_candidates=4))
        assert (method.name, method.level, method.language) == (name, "char", "en")
        assert method.max_candidates == 4  # type: ignore[attr-defined]
    ocr, morphonym = build_perturbation("C-ocr", "en"), build_perturbation("C-morphonym", "en")
    span = Span(4, 10, "modern")
    assert ocr.candidates("the modern", span, random.Random(1)) == morphonym.candidates(
        "the modern", span, random.Random(1))


def test_keyboard_typos_are_qwerty_neighbours_in_the_same_case() -> None:
    edits = list(edits_of("C-keyboard", SENTENCES))
    assert len(edits) >= 3 * len(SENTENCES)
    for edit in edits:
        assert len(edit.replacement) == len(edit.original) and hamming(edit.original, edit.replacement) == 1
        old, new = next((a, b) for a, b in zip(edit.original, edit.replacement, strict=True) if a != b)
        assert near_on_keyboard(old, new), edit
        assert old.isupper() == new.isupper(), edit


def test_insert_adds_one_neighbouring_key_next_to_a_letter() -> None:
    edits = list(edits_of("C-insert", SENTENCES))
    assert len(edits) >= 2 * len(SENTENCES)  # the loop below checks something
    for edit in edits:
        old, new = edit.original, edit.replacement
        assert len(new) == len(old) + 1
        i = next((k for k in range(len(old)) if old[k] != new[k]), len(old))
        # the extra letter is new[i] (or an equal letter just after it): it neighbours the letter it sits beside
        assert new[:i] + new[i + 1 :] == old, edit
        beside = [new[j] for j in (i - 1, i + 1) if 0 <= j < len(new) and new[j].isalpha()]
        extra = new[i]
        assert any(near_on_keyboard(extra, b) or extra.lower() == b.lower() for b in beside), edit


def test_swap_exchanges_two_adjacent_letters() -> None:
    edits = list(edits_of("C-swap", SENTENCES))
    assert len(edits) >= len(SENTENCES)
    for edit in edits:
        old, new = edit.original, edit.replacement
        assert Counter(old) == Counter(new)
        diff = [k for k in range(len(old)) if old[k] != new[k]]
        assert len(diff) == 2 and diff[1] == diff[0] + 1, edit
        assert old[diff[0]] == new[diff[1]] and old[diff[1]] == new[diff[0]]


def test_delete_drops_one_letter_from_words_of_three_or_more() -> None:
    edits = list(edits_of("C-delete", SENTENCES))
    assert len(edits) >= 2 * len(SENTENCES)
    for edit in edits:
        old, new = edit.original, edit.replacement
        assert len(old) >= 3 and len(new) == len(old) - 1
        assert any(old[:k] + old[k + 1 :] == new for k in range(1, len(old))), edit
        assert new[0] == old[0]  # the first letter stays


def test_shuffle_keeps_first_last_and_letters() -> None:
    edits = list(edits_of("C-shuffle", SENTENCES))
    assert edits
    for edit in edits:
        old, new = edit.original, edit.replacement
        assert len(old) >= 4 and old.isalpha()
        assert (new[0], new[-1]) == (old[0], old[-1])
        assert sorted(new[1:-1]) == sorted(old[1:-1]) and new != old


def test_ocr_confusions_use_letters_only() -> None:
    edits = list(edits_of("C-ocr", SENTENCES))
    assert edits
    for edit in edits:
        assert edit.replacement.replace("'", "").isalpha(), edit
        assert not any(c.isdigit() for c in edit.replacement)
    candidates = build_perturbation("C-ocr", "en").candidates("a modern barn", Span(2, 8, "modern"),
                                                              random.Random(0))
    assert "rnodern" in candidates and "moclern" in candidates  # m -> rn, d -> cl come first
    assert build_perturbation("C-ocr", "en").candidates("I", Span(0, 1, "I"), random.Random(0)) == ["l"]


@pytest.mark.parametrize("method", METHODS)
def test_digits_placeholders_and_protected_words_untouched(method: str) -> None:
    text = ("Hello {name}, the price of <item> is $price or 3.5 dollars for 1,000 apples, 50% off the 5th "
            "box [MASK] and 12kg of bananas, says the grocer about apples")
    keep = ["{name}", "<item>", "$price", "3.5", "1,000", "50%", "5th", "[MASK]", "12kg"]
    protect = Protection(words=frozenset({"apples"}))
    for seed in range(20):
        result = perturb(method, text, seed, budget=ChangeBudget(rate=1.0), protect=protect)
        assert result.edits
        for token in [*keep, "apples"]:
            assert result.text.count(token) == text.count(token), (token, result.text)
        for edit in result.edits:
            assert "apples" not in edit.original


@pytest.mark.parametrize("method", METHODS)
def test_numbers_in_gsm8k_questions_unchanged(method: str) -> None:
    questions = gsm8k_questions(200)
    changed = 0
    for seed, question in enumerate(questions):
        result = perturb(method, question, seed)
        assert apply_edits(question, result.edits) == result.text
        assert re.findall(r"\d[\d,.]*", result.text) == re.findall(r"\d[\d,.]*", question)
        changed += result.changed
    assert changed >= 0.95 * len(questions)


@pytest.mark.parametrize("method", METHODS)
def test_seeded_runs_repeat_and_seeds_differ(method: str) -> None:
    first = [perturb(method, s, seed=7).text for s in SENTENCES]
    assert first == [perturb(method, s, seed=7).text for s in SENTENCES]
    assert first != [perturb(method, s, seed=8).text for s in SENTENCES]


@pytest.mark.parametrize("method", ONE_CHAR)
def test_three_to_fifteen_changed_characters(method: str) -> None:
    long = perturb(method, LONG, seed=3)
    assert 14 <= len(long.edits) <= 15  # ~150 eligible words x 0.1, capped at 15
    short = perturb(method, SENTENCES[0], seed=3)
    assert len(short.edits) == 3  # 16 words x 0.1 -> 2, raised to the minimum
    for edit in long.edits + short.edits:  # one character per edit (an OCR glyph may be two letters)
        changed = abs(len(edit.replacement) - len(edit.original)) or hamming(edit.original, edit.replacement)
        assert changed == 1 or method in ("C-ocr", "C-morphonym"), edit


def test_swap_and_shuffle_stay_within_fifteen_changed_characters() -> None:
    for seed in range(10):
        swap = perturb("C-swap", LONG, seed)
        assert 3 <= 2 * len(swap.edits) <= 15
        shuffle = perturb("C-shuffle", LONG, seed)
        assert 2 <= len(shuffle.edits) <= 3
        assert sum(hamming(e.original, e.replacement) for e in shuffle.edits) >= 3


@pytest.mark.parametrize("method", METHODS)
def test_candidates_never_return_the_original_and_are_deterministic(method: str) -> None:
    perturbation = build_perturbation(method, "en", MethodOptions(max_candidates=6))
    text = SENTENCES[1]
    spans = [Span(m.start(), m.end(), m.group()) for m in re.finditer(r"[A-Za-z]+", text)]
    spans.append(Span(0, 1, "N"))  # a one-letter span
    some = 0
    for span in spans:
        found = perturbation.candidates(text, span, random.Random(5))
        assert span.text not in found and len(found) == len(set(found)) and len(found) <= 6
        assert found == perturbation.candidates(text, span, random.Random(5))
        some += bool(found)
    assert some >= len(spans) // 2


def test_word_candidates_spread_over_positions() -> None:
    keyboard = build_perturbation("C-keyboard", "en")
    found = keyboard.candidates("a wonderful day", Span(2, 11, "wonderful"), random.Random(0))
    positions = {next(k for k in range(9) if c[k] != "wonderful"[k]) for c in found}
    assert len(found) == 10 and len(positions) >= 5
