"""Memory planning: how many rows a batch may take together, from what each row allocates against the memory
there is, on a device (its free memory) and on a CPU (the host's available memory), under a ``--max-memory``
limit when one is given.

Long generations: a reasoning model's trace runs to thousands of tokens, and decoding keeps every row's keys and values for the
whole sequence: per token ``layers x kv heads x head dim x 2 (K and V) x dtype bytes``. For an 8B Llama-3
(32 layers, 8 KV heads of 128, bf16) that is 128 KiB a token, so a row of 600 prompt + 4,096 trace + 256 reply
tokens holds about 620 MiB: 8 rows need 5 GiB beside the 16 GiB of weights. On a device with less free memory
the rows are decoded fewer at a time instead of failing out of memory mid-run.

Callers outside the backend ask :func:`planned_rows` before a batch of long decodes (MATCHA on a thinking target).

Attacks (:class:`AttackShape`): beside the KV cache, a forward over a large vocabulary allocates tensors the size of
the vocabulary at every position it scores: the logits (float32 after the LM head), and for a gradient their
gradient too, while the loss's log-softmax goes a chunk at a time (``attacks/matcha/loss.py``: a constant). For
Gemma 3 (262,144 tokens) that is 1 MiB per scored position per row, 2 MiB with the gradient: 80 scored positions
of 8 rows with gradients take 1.3 GiB. :func:`attack_rows` sizes lock-step gradient batches and candidate
scoring chunks from it (``attacks/matcha/objective.py``), :func:`memory_budget` says how much memory there is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from robusteval.errors import UserError

#: Bytes per element of the dtypes a KV cache is kept in.
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
#: Share of the free memory the KV caches may take: the rest is for activations, logits and the allocator's slack.
KV_SHARE = 0.6


@dataclass(frozen=True)
class KVShape:
    """What sets a decoder's KV cache size per token."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int

    @property
    def bytes_per_token(self) -> int:
        """``layers x kv heads x head dim x 2 (keys and values) x dtype bytes``."""
        return self.layers * self.kv_heads * self.head_dim * 2 * self.dtype_bytes

    def bytes_per_row(self, prompt_tokens: int, thinking_tokens: int, reply_tokens: int) -> int:
        """The KV cache of one row at its longest: prompt + trace + reply tokens."""
        return self.bytes_per_token * (prompt_tokens + thinking_tokens + reply_tokens)


def kv_shape(config: Any, dtype: Any) -> KVShape:
    """The KV shape of a transformers model config (``num_hidden_layers``, ``num_key_value_heads`` (absent: one per
    attention head), ``head_dim`` (absent: hidden size / attention heads)) kept in ``dtype`` (a torch dtype or its
    name)."""
    text = getattr(config, "text_config", None) or config  # multimodal configs hold the decoder's apart
    heads = int(text.num_attention_heads)
    kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(text, "head_dim", None) or text.hidden_size // heads)
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPE_BYTES:
        raise ValueError(f"no KV-cache size known for dtype {name}")
    return KVShape(int(text.num_hidden_layers), kv_heads, head_dim, DTYPE_BYTES[name])


def rows_for(per_row_bytes: int, free_bytes: int, *, share: float = KV_SHARE, cap: int | None = None) -> int:
    """Rows whose KV caches fit ``share`` of ``free_bytes`` (at least one: a row that does not fit is still tried,
    alone), at most ``cap``."""
    rows = max(1, int(free_bytes * share) // max(1, per_row_bytes))
    return rows if cap is None else min(rows, cap)


def free_memory(device: Any) -> int | None:
    """Free bytes on a CUDA device (None elsewhere: a CPU's memory is not planned here)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(free)


def planned_rows(
    backend: Any,
    prompt_tokens: int,
    new_tokens: int,
    *,
    thinking_tokens: int = 0,
    free_bytes: int | None = None,
) -> int | None:
    """Rows of ``prompt_tokens`` + ``thinking_tokens`` + ``new_tokens`` a batch of ``backend`` (an hf backend:
    ``model.config``, ``dtype``, ``device``, ``batch_size``) may decode together, at most its batch size; None when
    it cannot be planned (no model config, or no memory reading). Without ``free_bytes``: :func:`memory_budget`
    (the device's free memory, or on a CPU the host's available memory, under the backend's ``max_memory``)."""
    config = getattr(getattr(backend, "model", None), "config", None)
    free = free_bytes if free_bytes is not None else (
        memory_budget(getattr(backend, "device", "cpu"), getattr(backend, "max_memory", None))
        if config is not None else None)
    if config is None or free is None:
        return None
    try:
        shape = kv_shape(config, getattr(backend, "dtype", "float32"))
    except (AttributeError, ValueError):
        return None
    cap = getattr(backend, "batch_size", None)
    return rows_for(
        shape.bytes_per_row(prompt_tokens, thinking_tokens, new_tokens), free, cap=int(cap) if cap else None
    )


# ------------------------------------------------------------------------------------------------ host memory
#: Share of the memory budget one batch's per-row tensors may take: the rest is the allocator's slack, the
#: fragments a freed tensor leaves, and whatever the caller holds besides (the reference logits of an attack).
ROW_SHARE = 0.5
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str | int | float, *, field: str = "--max-memory") -> int:
    """Bytes of a size such as ``4GB`` (10^9), ``4GiB`` (2^30), ``512MB``, ``1.5g`` or a plain byte count."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
        if found is None or found.group(2).lower() not in _UNITS:
            raise UserError(f"{field}: {text!r} is not a size (e.g. 4GB, 4GiB, 512MB)")
        value, unit = float(found.group(1)), found.group(2).lower()
    size = int(value * _UNITS[unit])
    if size <= 0:
        raise UserError(f"{field}: {text!r} must be more than 0 bytes")
    return size


def host_available() -> int | None:
    """Bytes the host can still give without swapping (``MemAvailable`` of /proc/meminfo on Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # elsewhere: the free pages the C library reports (no page cache counted: errs low)
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def resident_bytes() -> int:
    """This process's resident memory now."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_budget(device: Any, max_memory: int | None = None, *, available: int | None = None,
                  resident: int | None = None) -> int | None:
    """Bytes a batch may still allocate: the device's free memory on CUDA, the host's available memory on a CPU,
    each capped by ``max_memory`` (the process's whole limit: what it holds already is taken off on a CPU; on a
    device, torch's allocation). None when nothing can be read and no limit was given."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        free = available if available is not None else free_memory(device)
        held = resident if resident is not None else int(torch.cuda.memory_allocated(device))
    else:
        free = available if available is not None else host_available()
        held = resident if resident is not None else resident_bytes()
    if max_memory is not None:
        room = max(0, max_memory - held)
        free = room if free is None else min(free, room)
    return free


@dataclass(frozen=True)
class AttackShape:
    """What one row of an attack's forward allocates: over ``vocab`` logits (float32, ``logit_bytes`` each) at
    each scored position, and a KV cache of ``kv.bytes_per_token`` for every token it attends (the cached prefix is
    forked per row). ``hidden`` x ``layers`` sizes the activations a backward keeps per fed token."""

    vocab: int
    hidden: int
    layers: int
    kv: KVShape
    logit_bytes: int = 4
    #: Activations autograd keeps per fed token and layer, in hidden-size units (attention in/out, the MLP's
    #: wider intermediate, norms): a generous round figure, so a plan errs towards smaller batches.
    activations_per_token: int = 24

    def row_bytes(self, scored: int, prefix: int, fed: int, *, gradient: bool) -> int:
        """One row scoring ``scored`` positions after a cached ``prefix`` of tokens, ``fed`` tokens fed after it;
        ``gradient``: the logits' gradient and the activations a backward keeps are counted too."""
        logits = scored * self.vocab * self.logit_bytes * (2 if gradient else 1)
        kv = self.kv.bytes_per_token * (prefix + fed)
        kept = fed * self.hidden * self.layers * self.activations_per_token * self.kv.dtype_bytes if gradient else 0
        return logits + kv + kept


def attack_shape(backend: Any) -> AttackShape | None:
    """The :class:`AttackShape` of an hf backend (None without a model config)."""
    config = getattr(getattr(backend, "model", None), "config", None)
    if config is None:
        return None
    try:
        kv = kv_shape(config, getattr(backend, "dtype", "float32"))
    except (AttributeError, ValueError):
        return None
    text = getattr(config, "text_config", None) or config
    vocab = int(backend.embedding_matrix.shape[0]) if hasattr(backend, "embedding_matrix") else int(text.vocab_size)
    # The LM head's logits come in the model's dtype (the loss upcasts a chunk at a time).
    return AttackShape(vocab, int(text.hidden_size), int(text.num_hidden_layers), kv, logit_bytes=kv.dtype_bytes)


def attack_rows(shape: AttackShape, budget: int, scored: int, prefix: int, fed: int, *, gradient: bool,
                share: float = ROW_SHARE) -> int:
    """Rows of :meth:`AttackShape.row_bytes` that fit ``share`` of ``budget`` bytes (at least one)."""
    return rows_for(shape.row_bytes(scored, prefix, fed, gradient=gradient), budget, share=share)
