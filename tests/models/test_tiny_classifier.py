"""The tiny NLI classifier: a real causal LM whose label, read through ``LabelClassifier``, follows a lexical
rule on synthetic pairs, stays parseable on real OCNLI text and flips when 不 is inserted.

The model is built once per session (``tiny_nli_dir`` in conftest.py); the determinism check builds two short
extra ones, since a full second build would double the cost.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from helpers.shared import shared_file
from robusteval.evals.classification import ClassificationTemplate, LabelClassifier
from robusteval.models import load_backend
from robusteval.models.tiny import NLI_LABELS, build_nli_tokenizer, build_tiny_nli_classifier, tiny_nli_pairs

HELD_OUT_SEED = 4242  # training uses seed 0; these pairs are new draws


def _classifier(model_dir: Path) -> LabelClassifier:
    backend = load_backend(f"hf:{model_dir}", device="cpu")
    return LabelClassifier(backend, ClassificationTemplate.load(str(model_dir / "template.json")))


@pytest.fixture(scope="module")
def classifier(tiny_nli_dir: Path) -> LabelClassifier:
    return _classifier(tiny_nli_dir)


@pytest.fixture(scope="module")
def ocnli_pairs() -> list[dict[str, str]]:
    lines = shared_file("ocnli/dev.json").read_text(encoding="utf-8").splitlines()[:40]
    return [{"premise": r["sentence1"], "hypothesis": r["sentence2"]} for r in map(json.loads, lines)]


def _fields(pairs: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"premise": p["premise"], "hypothesis": p["hypothesis"]} for p in pairs]


def _insert_negation(hypothesis: str, rng: random.Random) -> str:
    """不 at a random place inside the hypothesis (before its final 。 if any)."""
    body = hypothesis.removesuffix("。")
    at = rng.randint(0, len(body))
    return body[:at] + "不" + body[at:] + hypothesis[len(body):]


def test_template_file_matches_the_classifier_format(tiny_nli_dir: Path) -> None:
    data = json.loads((tiny_nli_dir / "template.json").read_text(encoding="utf-8"))
    assert data["name"] == "tiny-nli"
    assert data["labels"] == {label: [label] for label in NLI_LABELS}
    assert data["verbalizers"] == {label: label for label in NLI_LABELS}
    assert data["text_fields"] == ["premise", "hypothesis"]
    assert data["prefix"] == ""
    assert data["prompt"] == "前提：$premise\n假设：$hypothesis\n关系："


def test_common_characters_and_labels_are_single_tokens(tiny_nli_dir: Path) -> None:
    backend = load_backend(f"hf:{tiny_nli_dir}", device="cpu")
    for text in ("不", "没", "可", "学", "校", "：", " entailment", " neutral", " contradiction"):
        assert len(backend.encode(text)) == 1, text  # type: ignore[attr-defined]
    # Every CJK character is its own pre-token (kept by the saved tokenizer), so an inserted 不 is one token.
    assert len(backend.encode("学校不去")) == 4  # type: ignore[attr-defined]
    # An unseen character falls back to bytes and round-trips.
    assert backend.decode(backend.encode("龘不")) == "龘不"  # type: ignore[attr-defined]


def test_held_out_synthetic_pairs_follow_the_rule(classifier: LabelClassifier) -> None:
    pairs = tiny_nli_pairs(150, seed=HELD_OUT_SEED)
    records = classifier.classify(_fields(pairs))
    hard = sum(r["label"] == p["label"] for r, p in zip(records, pairs, strict=True)) / len(pairs)
    soft = sum(r["soft_label"] == p["label"] for r, p in zip(records, pairs, strict=True)) / len(pairs)
    assert hard >= 0.9, hard
    assert soft >= 0.9, soft
    assert all(r["generation"].strip() in NLI_LABELS for r in records)
    assert all(abs(sum(r["probs"].values()) - 1.0) < 1e-6 for r in records)


def test_real_ocnli_pairs_get_a_parseable_label(
    classifier: LabelClassifier, ocnli_pairs: list[dict[str, str]]
) -> None:
    records = classifier.classify(ocnli_pairs)
    parsed = sum(r["label"] is not None for r in records) / len(records)
    assert parsed >= 0.95, [r["generation"] for r in records if r["label"] is None]


@pytest.mark.parametrize(("name", "threshold"), [("synthetic", 0.8), ("ocnli", 0.6)])
def test_inserting_negation_flips_entailment_to_contradiction(
    classifier: LabelClassifier, request: pytest.FixtureRequest, name: str, threshold: float
) -> None:
    rng = random.Random(0)
    if name == "ocnli":  # real text: only this case needs the shared data
        source: list[dict[str, str]] = request.getfixturevalue("ocnli_pairs")
    else:
        source = _fields([p for p in tiny_nli_pairs(120, seed=HELD_OUT_SEED + 1) if p["label"] == "entailment"])
    said = classifier.classify(source)
    entailed = [p for p, r in zip(source, said, strict=True) if r["label"] == "entailment"]
    assert len(entailed) >= 5, name
    negated = [{**p, "hypothesis": _insert_negation(p["hypothesis"], rng)} for p in entailed]
    flipped = sum(r["label"] == "contradiction" for r in classifier.classify(negated)) / len(negated)
    assert flipped >= threshold, (name, flipped)


def test_same_seed_same_model(tmp_path: Path) -> None:
    """Two builds with one seed are byte-identical in weights and tokenizer, and answer alike; another seed
    differs. Short training keeps this cheap: determinism does not depend on the number of steps."""
    dirs = [build_tiny_nli_classifier(tmp_path / name, seed=seed, train_steps=20)
            for name, seed in (("a", 7), ("b", 7), ("c", 8))]
    weights = [load_file(str(d / "model.safetensors")) for d in dirs]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert any(not torch.equal(weights[0][k], weights[2][k]) for k in weights[0])
    assert (dirs[0] / "tokenizer.json").read_bytes() == (dirs[1] / "tokenizer.json").read_bytes()
    assert (dirs[0] / "template.json").read_bytes() == (dirs[1] / "template.json").read_bytes()
    pairs = _fields(tiny_nli_pairs(6, seed=HELD_OUT_SEED))
    first, second = (_classifier(d).classify(pairs) for d in dirs[:2])
    assert first == second
    assert tiny_nli_pairs(30, seed=3) == tiny_nli_pairs(30, seed=3)
    assert build_nli_tokenizer().get_vocab() == build_nli_tokenizer().get_vocab()
