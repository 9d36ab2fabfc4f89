"""Word-importance attack against a real tiny NLI classifier: α and budget limits, per-rate prefix property,
flips verified independently, determinism, the greedy baseline and the hard-label (sampling) estimator."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from helpers.shared import needs_modules, shared_file
from robusteval.attacks.wordimportance import WordImportanceConfig, attack_example, attack_summary
from robusteval.data.example import Example
from robusteval.data.loaders import load_dataset
from robusteval.errors import UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    example_fields,
    with_fields,
)
from robusteval.models import load_backend
from robusteval.perturbations import Protection, apply_edits, build_perturbation
from robusteval.perturbations.base import Edit
from robusteval.store import RunStore

pytestmark = needs_modules("pypinyin")  # C-homophone, W-homophone


@pytest.fixture(scope="module")
def target(tiny_nli_dir: Path):
    backend = load_backend(f"hf:{tiny_nli_dir}")
    template = ClassificationTemplate.load(str(tiny_nli_dir / "template.json"))
    return backend, template


def pairs() -> list[Example]:
    """Hand-written pairs in the tiny model's world (its rule: 不/没 -> contradiction, 可能/也许 -> neutral)."""
    rows = [
        ("小王今天去学校买书", "小王去学校", "entailment"),
        ("我们明天在商店工作", "我们在商店工作", "entailment"),
        ("他每天早上吃苹果", "他吃苹果", "entailment"),
        ("老师下午去图书馆看报纸", "老师去图书馆", "entailment"),
        ("小李昨天下雨在家学习", "小李没有在家", "contradiction"),
        ("妈妈今天去商店买菜", "妈妈可能去商店", "neutral"),
    ]
    return [Example(f"p{i}", p, label, "label", {"hypothesis": h}) for i, (p, h, label) in enumerate(rows)]


def run_attack(target, examples, method_names, tmp_path: Path, **config) -> list[dict]:
    backend, template = target
    defaults = {"rates": (0.1, 0.2, 0.5), "budget": 200, "confidence": "logprob",
                "fields": ("premise", "hypothesis"), "language": "zh"}
    cfg = WordImportanceConfig(**{**defaults, **config})
    methods = [build_perturbation(name, "zh") for name in method_names]
    protect = Protection(words=frozenset(template.labels))
    with RunStore.open(tmp_path / f"store-{len(list(tmp_path.iterdir()))}", identity={}) as store:
        classifier = LabelClassifier(backend, template, store, soft=cfg.confidence == "logprob")
        return [attack_example(ex, classifier, methods, cfg, protect=protect) for ex in examples]


def test_limits_edits_and_independent_flip_check(target, tmp_path: Path) -> None:
    backend, template = target
    examples = pairs()
    records = run_attack(target, examples, ["C-homophone"], tmp_path)
    fresh = LabelClassifier(backend, template)  # no store: a new, independent query
    attacked = [r for r in records if r["status"] != "skipped"]
    assert attacked, "the tiny classifier should answer some hand-written pairs right"
    for example, record in zip(examples, records, strict=True):
        if record["status"] == "skipped":
            assert record["queries"] == 1 and record["original_label"] != example.answer
            continue
        allowance = math.floor(0.5 * record["n_words"] + 1e-9)
        assert record["perturbed_words"] <= allowance
        assert record["queries"] <= 200
        for name, edits in record["edits"].items():
            rebuilt = apply_edits(record["original"][name], [Edit.from_dict(e) for e in edits])
            assert rebuilt == record["adversarial"][name]
            assert all(e["method"] == "C-homophone" for e in edits)
        for rate, outcome in record["per_rate"].items():
            assert outcome["perturbed_words"] <= math.floor(float(rate) * record["n_words"] + 1e-9)
            assert outcome["queries"] <= record["queries"]
        adversarial = with_fields(example, record["adversarial"])
        label = fresh.classify([example_fields(adversarial)])[0]["label"]
        if record["status"] == "success":
            assert label != example.answer
        else:
            assert label == example.answer
    assert any(r["status"] == "success" for r in attacked)  # 不/没 homophones exist: the attack can flip it


def test_smaller_rate_is_a_prefix_of_the_largest(target, tmp_path: Path) -> None:
    examples = pairs()
    multi = run_attack(target, examples, ["C-homophone", "C-morphonym"], tmp_path, rates=(0.1, 0.2, 0.5))
    assert any(a["status"] != "skipped" for a in multi)  # something to compare
    for rate in (0.1, 0.2):
        single = run_attack(target, examples, ["C-homophone", "C-morphonym"], tmp_path, rates=(rate,))
        for a, b in zip(multi, single, strict=True):
            if a["status"] == "skipped":
                continue
            key = f"{rate:g}"
            assert a["per_rate"][key]["success"] == (b["status"] == "success")
            assert a["per_rate"][key]["queries"] == b["queries"]
            assert a["per_rate"][key]["perturbed_words"] == b["perturbed_words"]


def test_budget_is_respected(target, tmp_path: Path) -> None:
    records = run_attack(target, pairs(), ["C-homophone"], tmp_path, budget=6)
    attacked = [r for r in records if r["status"] != "skipped"]
    assert all(r["queries"] <= 6 for r in records)
    assert any(r["stop_reason"] == "budget" for r in attacked)
    with pytest.raises(UserError, match="budget"):
        WordImportanceConfig(budget=0)


def test_deterministic_and_summary(target, tmp_path: Path) -> None:
    first = run_attack(target, pairs(), ["W-homophone", "C-traditional"], tmp_path)
    second = run_attack(target, pairs(), ["W-homophone", "C-traditional"], tmp_path)
    assert first == second
    summary = attack_summary(first, (0.1, 0.2, 0.5))
    attacked = [r for r in first if r["status"] != "skipped"]
    row = summary["by_rate"]["0.5"]
    wins = [r for r in attacked if r["per_rate"]["0.5"]["success"]]
    assert row["n_success"] == len(wins) and row["n_skipped"] == len(first) - len(attacked)
    assert row["attack_success_rate"] == pytest.approx(len(wins) / len(attacked))
    assert row["accuracy_under_attack"] == pytest.approx((len(attacked) - len(wins)) / len(first))
    assert row["avg_queries"] == pytest.approx(sum(r["per_rate"]["0.5"]["queries"] for r in attacked) / len(attacked))
    assert summary["asr_by_rate"]["0.5"] == row["attack_success_rate"]
    # Success rate cannot fall as the allowed rate grows.
    asr = [summary["by_rate"][k]["attack_success_rate"] for k in ("0.1", "0.2", "0.5")]
    assert asr == sorted(asr)


def test_ranking_orders_by_importance_and_baseline_skips_it(target, tmp_path: Path) -> None:
    ranked = [r for r in run_attack(target, pairs()[:4], ["C-homophone"], tmp_path) if r["status"] != "skipped"]
    greedy = [r for r in run_attack(target, pairs()[:4], ["C-homophone"], tmp_path, rank=False)
              if r["status"] != "skipped"]
    assert ranked and greedy, "the four entailment pairs should be answered right, so they are attacked"
    for r in ranked:
        scores = [w["score"] for w in r["importance"]]
        assert scores and scores == sorted(scores, reverse=True)
    for r in greedy:
        assert r["importance"] == []


def test_importance_is_the_confidence_drop_when_the_word_is_deleted(target, tiny_nli_dir: Path,
                                                                     tmp_path: Path) -> None:
    """Every reported importance, recomputed here: p(true label | original) - p(true label | the word deleted),
    asked of a second backend instance through a classifier with no store (nothing shared with the attack)."""
    _, template = target
    independent = LabelClassifier(load_backend(f"hf:{tiny_nli_dir}"), template, soft=True)

    def confidence(example: Example, changed: dict[str, str]) -> float:
        record = independent.classify([example_fields(with_fields(example, changed))])[0]
        return float(record["probs"][example.answer])

    examples = pairs()
    records = run_attack(target, examples, ["C-homophone"], tmp_path)
    checked = 0
    for example, record in zip(examples, records, strict=True):
        if record["status"] == "skipped":
            continue
        before = confidence(example, {})
        assert record["importance"]
        for entry in record["importance"]:
            text = record["original"][entry["field"]]
            start, end = entry["start"], entry["start"] + len(entry["word"])
            assert text[start:end] == entry["word"]
            after = confidence(example, {entry["field"]: text[:start] + text[end:]})
            assert entry["score"] == pytest.approx(before - after, abs=1e-6), entry
            checked += 1
        # Both fields (premise as "text", and the hypothesis) are ranked.
        assert {entry["field"] for entry in record["importance"]} == {"text", "hypothesis"}
    assert checked >= 10, checked


def test_hard_label_sampling_estimator(target, tmp_path: Path) -> None:
    records = run_attack(target, pairs()[:3], ["C-homophone"], tmp_path, confidence="sample", n_samples=3,
                         budget=120)
    attacked = [r for r in records if r["status"] != "skipped"]
    assert attacked
    assert all(r["queries"] <= 120 for r in records)
    for r in attacked:
        # A share of n_samples = 3 sampled answers (0 once the greedy label flipped): 0, 1/3, 2/3 or 1.
        assert any(r["final_confidence"] == pytest.approx(k / 3) for k in range(4)), r["final_confidence"]
    greedy = run_attack(target, pairs()[:3], ["C-homophone"], tmp_path, confidence="greedy")
    assert all(r["queries"] <= 200 for r in greedy)


def test_attack_on_real_ocnli_text(target, tmp_path: Path) -> None:
    examples = load_dataset("ocnli", shared_file("ocnli/dev.json"), limit=6)
    records = run_attack(target, examples, ["C-traditional"], tmp_path, budget=80)
    assert all(r["queries"] <= 80 for r in records)
    edited = [(r, name, edits) for r in records for name, edits in r.get("edits", {}).items() if edits]
    assert edited, "C-traditional should change some word of six real OCNLI pairs"
    for r, name, edits in edited:
        assert all(edit["replacement"] != edit["original"] for edit in edits)
        assert apply_edits(r["original"][name], [Edit.from_dict(e) for e in edits]) == r["adversarial"][name]
        assert r["adversarial"][name] != r["original"][name]


def test_sampling_never_overdraws_the_budget(target, tmp_path: Path) -> None:
    """Regression: each text costs 1 + n_samples; a batch of candidates used to reserve only 1 per text."""
    for budget in (9, 17, 40):
        records = run_attack(target, pairs(), ["C-homophone", "C-morphonym"], tmp_path, confidence="sample",
                             n_samples=3, budget=budget)
        assert all(r["queries"] <= budget for r in records), [r["queries"] for r in records]
