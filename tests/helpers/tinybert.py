"""A tiny fill-mask BERT built locally for W-maskedlm tests: a hand-made WordPiece vocabulary over a small Chinese +
English corpus (character-level for Chinese like bert-base-chinese), a 2-layer BertForMaskedLM (hidden 32),
optionally trained a few hundred steps, saved to a folder and loaded back through the real path."""

from __future__ import annotations

import re
from pathlib import Path

import torch

CORPUS = [
    "the cat sat on the mat",
    "a small cat plays with a ball",
    "the children are playing in the garden",
    "she reads a book every night",
    "a dog runs in the park",
    "我喜欢吃苹果",
    "香蕉是黄色的",
    "今天天气很好",
    "他在公园里散步",
    "小猫在睡觉",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# A hand-made WordPiece vocabulary (trained ones differ from run to run on ties): whole words, a few split
# ones (gar ##den, child ##ren), every letter and ##letter so any word tokenises, and the corpus's ideographs.
WORDS = ["the", "cat", "dog", "sat", "on", "mat", "a", "small", "plays", "with", "ball", "child", "##ren", "are",
         "playing", "in", "gar", "##den", "she", "book", "every", "night", "runs", "park"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
CJK = re.compile(r"[\u4e00-\u9fff]+")
IDEOGRAPHS = sorted({char for line in CORPUS for char in line if CJK.fullmatch(char)})
VOCAB = list(dict.fromkeys([*SPECIALS, *WORDS, *LETTERS, *(f"##{c}" for c in LETTERS), *IDEOGRAPHS, ".", ",", "?",
                            "。", "，", "？"]))


def _tokenizer():  # type: ignore[no-untyped-def]
    """A lowercasing WordPiece tokenizer, character-level for Chinese like bert-base-chinese."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece({token: i for i, token in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return BertTokenizerFast(tokenizer_object=tok)


def _build(out: Path, train_steps: int) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = _tokenizer()
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = BertForMaskedLM(config)
    if train_steps:
        _train(model, tokenizer, train_steps)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _train(model, tokenizer, steps: int) -> None:  # type: ignore[no-untyped-def]
    """Plain MLM on the corpus (a random 35% of the tokens masked each step): ~1.5 s on one CPU thread."""
    encoded = [tokenizer(line)["input_ids"] for line in CORPUS]
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    width = max(len(ids) for ids in encoded)
    ids = torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in encoded])
    real = ids != tokenizer.pad_token_id
    inner = real & (ids != tokenizer.cls_token_id) & (ids != tokenizer.sep_token_id)
    for _ in range(steps):
        chosen = inner & (torch.rand(ids.shape, generator=generator) < 0.35)
        labels = torch.where(chosen, ids, torch.full_like(ids, -100))
        inputs = ids.masked_fill(chosen, tokenizer.mask_token_id)
        loss = model(input_ids=inputs, attention_mask=real.long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def build_tiny_bert(out: Path, train_steps: int) -> Path:
    """The tiny BERT saved to ``out`` (``train_steps`` 0: untrained, proposes gibberish whole words)."""
    return _build(out, train_steps)
