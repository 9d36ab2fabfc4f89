"""Memory planning for long generations: how many rows a batch may decode together, from the KV cache each row
needs against the device's free memory.

A reasoning model's trace runs to thousands of tokens, and decoding keeps every row's keys and values for the
whole sequence: per token ``layers x kv heads x head dim x 2 (K and V) x dtype bytes``. For an 8B Llama-3
(32 layers, 8 KV heads of 128, bf16) that is 128 KiB a token, so a row of 600 prompt + 4,096 trace + 256 reply
tokens holds about 620 MiB: 8 rows need 5 GiB beside the 16 GiB of weights. On a device with less free memory
the rows are decoded fewer at a time instead of failing out of memory mid-run.

Callers outside the backend ask :func:`planned_rows` before a batch of long decodes (MATCHA on a thinking target);
on a CPU (no free-memory reading) the plan is None and the backend's own batching stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    it cannot be planned (no model config, or no free-memory reading: a CPU)."""
    config = getattr(getattr(backend, "model", None), "config", None)
    free = free_bytes if free_bytes is not None else free_memory(getattr(backend, "device", "cpu"))
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
