"""gpt-oss's harmony channels on the hf backend (issue 35): decoding keeps the channel markers (special tokens
otherwise skipped), so a generation's analysis and final channels are split and the answer read from the final one.
A tokenizer with harmony's markers as added special tokens and a harmony chat template stands in for gpt-oss's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from robusteval.models.hf_prompts import HARMONY_MARKERS
from robusteval.text.thinking import ReasoningFormat, ReasoningOptions, split_generation

GENERATED = ("<|channel|>analysis<|message|>The answer is 5? No, 3 + 4 = 7.<|end|><|start|>assistant"
             "<|channel|>final<|message|>The answer is 7.")
TEMPLATE = ("{% for m in messages %}{% if m['role'] == 'assistant' %}<|start|>assistant<|channel|>final<|message|>"
            "{% else %}<|start|>{{ m['role'] }}<|message|>{% endif %}{{ m['content'] }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|start|>assistant{% endif %}")


@pytest.fixture(scope="module")
def harmony_dir(tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("tiny_harmony") / "model"
    shutil.copytree(tiny_llama_dir, out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    tokenizer.add_special_tokens({"additional_special_tokens": list(HARMONY_MARKERS)})
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(out)
    return out


def test_decoding_keeps_the_channel_markers_and_splits_the_channels(harmony_dir: Path) -> None:
    from robusteval.models import load_backend

    backend = load_backend(f"hf:{harmony_dir}")
    ids = backend.tokenizer(GENERATED, add_special_tokens=False)["input_ids"]
    markers = set(backend.tokenizer.convert_tokens_to_ids(list(HARMONY_MARKERS)))
    assert markers <= set(backend.tokenizer.all_special_ids) and markers & set(ids)  # they are special tokens
    # Other special tokens are still dropped (an end-of-sequence inside a row, padding).
    eos = backend.tokenizer.eos_token_id
    text = backend.decode([*ids, eos])
    assert text.replace(" ", "") == GENERATED.replace(" ", "")
    fmt = ReasoningOptions().resolve(backend)
    assert fmt == ReasoningFormat("harmony")
    split = split_generation(text, fmt)
    assert split.reply.replace(" ", "") == "Theansweris7." and "5?" in (split.thinking or "")
    assert not split.truncated
    # Cut inside the analysis channel: no reply, counted as truncated.
    cut = backend.decode(backend.tokenizer("<|channel|>analysis<|message|>The answer is 5",
                                           add_special_tokens=False)["input_ids"])
    assert split_generation(cut, fmt).truncated


def test_a_model_without_harmony_still_skips_every_special_token(tiny_llama_dir: Path) -> None:
    from robusteval.models import load_backend

    backend = load_backend(f"hf:{tiny_llama_dir}")
    ids = backend.encode("The answer is 7.")
    assert backend.decode([*ids, backend.tokenizer.eos_token_id]) == backend.tokenizer.decode(ids)
    assert not backend.kept_special_ids
