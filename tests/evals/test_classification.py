"""Classification templates: loading, filling, label parsing, errors; the classifier's cache and soft labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.data.example import Example
from robusteval.errors import DataError, UserError
from robusteval.evals.classification import (
    ClassificationTemplate,
    LabelClassifier,
    example_fields,
    with_fields,
)
from robusteval.store import RunStore


def test_builtin_nli_template_fills_and_parses() -> None:
    template = ClassificationTemplate.load("nli-zh")
    assert set(template.labels) == {"entailment", "neutral", "contradiction"}
    prompt = template.filled_prompt({"premise": "他在跑步", "hypothesis": "他在运动"})
    assert prompt == "前提：他在跑步\n假设：他在运动\n关系："
    assert "entailment" in template.filled_prefix()
    assert template.parse(" contradiction\n") == "contradiction"
    assert template.parse("我认为是蕴含") == "entailment"
    assert template.parse(" Neutral.") == "neutral"
    assert template.parse(" 中立，不是矛盾") == "neutral"  # the first label named wins
    assert template.parse(" maybe") is None


def test_generic_template_takes_labels_from_the_dataset() -> None:
    template = ClassificationTemplate.load("text", labels=["positive", "negative"])
    assert template.label_list == "positive, negative"
    assert "positive, negative" in template.filled_prefix()
    assert template.filled_prompt({"text": "great"}) == "Text: great\nLabel:"
    with pytest.raises(DataError, match="labels"):
        ClassificationTemplate.load("text")


def test_template_file_errors_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"prompt": "x $"}), "utf-8")
    with pytest.raises(DataError, match="text_fields"):
        ClassificationTemplate.load(str(bad))
    bad.write_text(json.dumps({"prompt": "x $ y", "text_fields": ["text"], "labels": {"a": ["a"]}}), "utf-8")
    with pytest.raises(DataError, match="placeholder"):
        ClassificationTemplate.load(str(bad))
    bad.write_text("{not json", "utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        ClassificationTemplate.load(str(bad))
    with pytest.raises(UserError, match="no such file"):
        ClassificationTemplate.load(str(tmp_path / "missing.json"))
    template = ClassificationTemplate.load("nli-zh")
    with pytest.raises(UserError, match="hypothesis"):
        template.filled_prompt({"premise": "x"})


def test_example_fields_round_trip() -> None:
    example = Example("e1", "前提句", "neutral", "label", {"hypothesis": "假设句", "genre": "news"})
    fields = example_fields(example)
    assert fields["text"] == fields["premise"] == "前提句"
    changed = with_fields(example, {"premise": "新前提", "hypothesis": "新假设"})
    assert changed.question == "新前提" and changed.meta["hypothesis"] == "新假设"
    assert changed.id == "e1" and changed.answer == "neutral" and changed.meta["genre"] == "news"


def test_classifier_caches_in_the_store_and_scores_labels(tiny_backend, tmp_path: Path) -> None:
    template = ClassificationTemplate.load("nli-zh")
    items = [{"premise": "他在跑步", "hypothesis": "他在运动"}, {"premise": "天气很好", "hypothesis": "下雨了"}]
    with RunStore.open(tmp_path / "run", identity={"t": 1}) as store:
        classifier = LabelClassifier(tiny_backend, template, store)
        assert classifier.soft  # the hf backend can score continuations
        first = classifier.classify(items + items[:1])
        assert classifier.queries == 2  # the repeated item is asked once
        assert first[0] == first[2]
        probs = first[0]["probs"]
        assert set(probs) == set(template.labels) and sum(probs.values()) == pytest.approx(1.0)
        assert first[0]["soft_label"] == max(probs, key=probs.get)
        again = LabelClassifier(tiny_backend, template, store)
        assert again.classify(items) == first[:2]
        assert again.queries == 0  # served from the store
        sampled = again.sample_labels(items[:1], n=3, temperature=0.9, seed=1)
        assert len(sampled[0]) == 3 and again.queries == 3
        assert again.sample_labels(items[:1], n=3, temperature=0.9, seed=1) == sampled and again.queries == 3
