"""Build tiny randomly initialised causal LMs locally, with a real trained tokenizer.

For tests, benchmarks and plug-in authors: no download, seconds to build, loaded back through the same
``hf:`` path as any real model. Outputs are gibberish; shapes, caches and gradients are real.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import torch

_SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def _training_corpus() -> list[str]:
    """Text the tokenizer learns from: the package's own samples and exemplars, plus a little arithmetic."""
    lines: list[str] = []
    samples = resources.files("robusteval.data") / "samples"
    for name in ("math.jsonl", "yesno.jsonl"):
        for line in (samples / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                lines.append(f"Q: {record['question']}\nA: The answer is {record['answer']}.")
    lines += _answer_first_blocks()
    lines += [f"{a} + {b} = {a + b}. {a} * {b} = {a * b}. {a} - {b} = {a - b}." for a in range(12) for b in range(12)]
    lines += ["yes no Yes No correct incorrect same different meaning reasoning 0 1"] * 4
    return lines


def _answer_first_blocks(sets: tuple[str, ...] = ("math", "yesno")) -> list[str]:
    """The built-in exemplars as answer-first blocks (question, answer, rationale)."""
    blocks = []
    exemplars = resources.files("robusteval.prompts") / "exemplars"
    for name in (f"{s}.json" for s in sets):
        for ex in json.loads((exemplars / name).read_text(encoding="utf-8"))["exemplars"]:
            blocks.append(f"Q: {ex['question']}\nA: The answer is {ex['answer']}. {ex['rationale']}")
    return blocks


def build_tokenizer(vocab_size: int = 600):  # type: ignore[no-untyped-def]
    """A byte-level BPE tokenizer trained on the package's own text (deterministic)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def build_tiny_llama(
    out_dir: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    vocab_size: int = 600,
    train_steps: int = 0,
    train_on: tuple[str, ...] = ("math",),
) -> Path:
    """Write a tiny LlamaForCausalLM + tokenizer into ``out_dir`` and return it.

    ``train_steps > 0`` briefly trains it on answer-first text (``Q: …\nA: The answer is X. …``) so that it
    follows the format: attacks then have answers and chains of thought to work on. Deterministic.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    if train_steps > 0:
        _train(model, tokenizer, train_steps, seed, train_on)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _train(model, tokenizer, steps: int, seed: int, sets: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """A few hundred AdamW steps on the answer-first corpus: enough for the format, not for arithmetic.

    Documents chain three exemplar blocks (answer, rationale, blank line, next ``Q:``) so the model learns
    to write a rationale and then start a new question, where generation stops.
    """
    blocks = _answer_first_blocks(sets)
    encoded_blocks = [tokenizer(b + "\n\n")["input_ids"] for b in blocks]
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        picks = torch.randint(0, len(encoded_blocks), (8, 3), generator=generator).tolist()
        batch = [[tokenizer.bos_token_id, *(t for i in row for t in encoded_blocks[i])] for row in picks]
        width = max(len(b) for b in batch)
        ids = torch.tensor([b + [tokenizer.pad_token_id] * (width - len(b)) for b in batch])
        labels = ids.clone()
        labels[labels == tokenizer.pad_token_id] = -100
        loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
