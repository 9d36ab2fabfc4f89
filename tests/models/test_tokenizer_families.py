"""The tokenizer families of real checkpoints, as tiny local models (``build_tiny_llama(tokenizer_family=...)``).

MATCHA tokenises prompt segments (exemplars, ``Q:``, the question, ``\\nA:``) one by one. What that does
depends on the family, and these tests document it on tokenizers built like the hub files:

* SentencePiece with a prefix space (Llama-2, Mistral-7B-v0.1): every separately encoded segment starts
  with ``▁`` (a segment that starts with a space gets ``▁▁``, a newline segment ``▁ <0x0A>``), so the
  segments' ids are not the ids of the whole prompt;
* byte-level BPE (GPT-2, Llama-3): the segments' ids concatenate to the whole prompt's here, since each
  boundary is also a pre-tokenizer boundary (Llama-3's split keeps ``.\\n`` together, though);
* Gemma: SentencePiece without the prefix space, so no ``▁`` is added and, here, segments add up too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from transformers import AutoTokenizer

from robusteval.attacks.matcha.objective import ordinary_token_ids
from robusteval.models import load_backend
from robusteval.models.base import GenerationRequest
from robusteval.models.tiny import (
    TOKENIZER_FAMILIES,
    build_family_tokenizer,
    build_tiny_llama,
    build_tokenizer,
)

SEGMENTS = ("Q:", " Tom has 3 apples.", "\nA:")
PROMPT = "".join(SEGMENTS)
NEW_FAMILIES = ("sentencepiece-prefix", "byte-level", "gemma")


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {family: build_tiny_llama(root / family, seed=0, tokenizer_family=family) for family in NEW_FAMILIES}


@pytest.fixture(scope="module")
def tokenizers(family_dirs: dict[str, Path]) -> dict[str, Any]:
    """Each family's tokenizer as users get it: loaded back from the folder."""
    return {family: AutoTokenizer.from_pretrained(folder) for family, folder in family_dirs.items()}


def _pieces(tokenizer: Any, text: str) -> list[str]:
    return tokenizer.convert_ids_to_tokens(tokenizer(text, add_special_tokens=False)["input_ids"])


def _segments(tokenizer: Any) -> list[list[str]]:
    return [_pieces(tokenizer, segment) for segment in SEGMENTS]


def _pipeline(folder: Path) -> dict[str, Any]:
    saved = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    return {key: saved[key] for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "model")}


def test_sentencepiece_prefix_puts_a_space_before_every_segment(tokenizers: dict[str, Any],
                                                                family_dirs: dict[str, Path]) -> None:
    tok = tokenizers["sentencepiece-prefix"]
    q, question, tail = _segments(tok)
    assert q[0].startswith("▁Q")
    assert "".join(question).startswith("▁▁Tom")  # the text's own space plus the prefix space
    assert tail[:2] == ["▁", "<0x0A>"]  # no newline piece: byte fallback, after the prefix space
    whole = _pieces(tok, PROMPT)
    assert "".join(whole) == "▁Q:▁Tom▁has▁3▁apples.<0x0A>A:"  # one prefix space, for the whole text
    assert whole[-3:] == ["<0x0A>", "A", ":"]
    assert q + question + tail != whole
    pipeline = _pipeline(family_dirs["sentencepiece-prefix"])
    assert [n["type"] for n in pipeline["normalizer"]["normalizers"]] == ["Prepend", "Replace"]
    assert pipeline["pre_tokenizer"] is None and pipeline["model"]["byte_fallback"]
    assert [d["type"] for d in pipeline["decoder"]["decoders"]] == ["Replace", "ByteFallback", "Fuse", "Strip"]


def test_sentencepiece_prefix_through_transformers_llama_tokenizer(family_dirs: dict[str, Path]) -> None:
    # A hub repo that names LlamaTokenizer is rebuilt by transformers' own class (here: Metaspace, prepend
    # "first", no normalizer) instead of taken from tokenizer.json as is. A segment that starts with a space
    # then gets no second "▁", but a newline segment still gets one, so segments still do not add up.
    from transformers import LlamaTokenizer

    tok = LlamaTokenizer.from_pretrained(family_dirs["sentencepiece-prefix"])
    q, question, tail = _segments(tok)
    assert tail[:2] == ["▁", "<0x0A>"]
    assert q + question + tail != _pieces(tok, PROMPT)


def test_byte_level_segments_add_up_to_the_whole(tokenizers: dict[str, Any]) -> None:
    tok = tokenizers["byte-level"]
    q, question, tail = _segments(tok)
    assert q + question + tail == _pieces(tok, PROMPT)
    assert "".join(q) == "Q:" and "".join(question).startswith("ĠTom") and tail[0] == "Ċ"
    # Llama-3's split joins punctuation with the newline after it: a model with a ".\n" piece (Llama-3 has
    # one) encodes "apples." + "\nA:" differently from "apples.\nA:".
    split = tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str("apples.\nA:")
    assert [piece for piece, _ in split] == ["apples", ".Ċ", "A", ":"]


def test_gemma_has_no_prefix_space(tokenizers: dict[str, Any], family_dirs: dict[str, Path]) -> None:
    tok = tokenizers["gemma"]
    q, question, tail = _segments(tok)
    assert "".join(q) == "Q:"
    assert "".join(question).startswith("▁Tom") and not "".join(question).startswith("▁▁")
    assert tail[0] == "\n"  # a newline piece, no "▁" before it
    assert q + question + tail == _pieces(tok, PROMPT)
    assert _pieces(tok, "é") == ["<0xC3>", "<0xA9>"]  # byte fallback
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    pipeline = _pipeline(family_dirs["gemma"])
    assert pipeline["normalizer"]["type"] == "Replace" and pipeline["model"]["byte_fallback"]


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_bos_comes_from_the_post_processor_and_text_round_trips(tokenizers: dict[str, Any], family: str) -> None:
    tok = tokenizers[family]
    ids = tok(PROMPT)["input_ids"]
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1
    assert tok(PROMPT, add_special_tokens=False)["input_ids"] == ids[1:]
    for text in (PROMPT, "Mia has 4 red pencils.\n\nQ: Is 7 > 5? café 20€ 🙂", " two  spaces"):
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_vocabulary_has_words_with_and_without_a_leading_space(tokenizers: dict[str, Any], family: str) -> None:
    tok = tokenizers[family]
    pieces = [p.replace("▁", " ").replace("Ġ", " ") for p in tok.convert_ids_to_tokens(list(range(len(tok))))]
    assert sum(p.startswith(" ") and p[1:].isalpha() and len(p) > 4 for p in pieces) >= 50
    assert sum(p.isalpha() and len(p) > 3 for p in pieces) >= 20
    assert len(ordinary_token_ids(tok)) >= 20  # MATCHA finds space-prefixed words to insert


def test_the_robusteval_family_is_the_default_tokenizer() -> None:
    assert build_family_tokenizer("robusteval").get_vocab() == build_tokenizer().get_vocab()
    assert TOKENIZER_FAMILIES[0] == "robusteval"
    with pytest.raises(ValueError, match="unknown tokenizer family"):
        build_family_tokenizer("wordpiece")


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_each_family_loads_as_an_hf_backend_and_generates(family_dirs: dict[str, Path], family: str) -> None:
    backend: Any = load_backend(f"hf:{family_dirs[family]}")
    assert backend.bos_ids == [backend.tokenizer.bos_token_id]
    prefix, prompt = backend.prompt_ids("Q: 1 + 1 = 2.\n", PROMPT)
    assert prefix[0] == backend.tokenizer.bos_token_id and backend.tokenizer.bos_token_id not in prompt
    (generation,) = backend.generate([GenerationRequest(prompt=PROMPT, max_new_tokens=6)])
    assert generation.n_tokens and generation.finish_reason in ("stop", "length")
    chat = backend.chat_text([{"role": "user", "content": "Q: Is 7 > 5?"}])
    assert chat.startswith(backend.tokenizer.bos_token)
