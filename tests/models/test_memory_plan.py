"""Memory planning for long (thinking) generations: the KV cache per token and per row, and the rows per batch it
leaves room for, checked against an 8B Llama-3's shape written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from robusteval.models.memory_plan import KVShape, kv_shape, planned_rows, rows_for

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def llama3_8b_config():  # type: ignore[no-untyped-def]
    """Llama-3-8B's published shape: 32 layers, 32 attention heads of 128 (4096 wide), 8 KV heads (GQA)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=4096,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=14336,
        vocab_size=128256,
    )


def test_an_8b_llama_holds_128_kib_of_kv_cache_per_token() -> None:
    shape = kv_shape(llama3_8b_config(), "bfloat16")
    assert shape == KVShape(layers=32, kv_heads=8, head_dim=128, dtype_bytes=2)
    assert shape.bytes_per_token == 32 * 8 * 128 * 2 * 2 == 128 * KIB
    # A real R1 row: 600 prompt + 4,096 trace + 256 reply tokens.
    assert shape.bytes_per_row(600, 4096, 256) == 4952 * 128 * KIB == 619 * MIB
    assert kv_shape(llama3_8b_config(), "torch.float32").bytes_per_token == 256 * KIB
    with pytest.raises(ValueError, match="dtype"):
        kv_shape(llama3_8b_config(), "int4")


def test_rows_per_batch_come_from_free_memory() -> None:
    row = 619 * MIB
    # 20 GiB free, 60% of it for the caches: 12 GiB / 619 MiB = 19 rows; capped by the backend's batch size.
    assert rows_for(row, 20 * GIB) == 12 * GIB // row == 19
    assert rows_for(row, 20 * GIB, cap=8) == 8
    assert rows_for(row, 1 * GIB) == 1  # one row is always tried
    assert rows_for(row, 20 * GIB, share=0.3) == 9


def test_the_plan_of_a_loaded_model(tiny_llama_dir: Path) -> None:
    from robusteval.models import load_backend

    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=64, device="cpu")
    shape = kv_shape(backend.model.config, backend.dtype)
    per_row = shape.bytes_per_row(100, 900, 24)
    assert shape.bytes_per_token == 2 * 2 * 16 * 2 * 4  # 2 layers, 2 KV heads of 16, float32
    assert planned_rows(backend, 100, 24, thinking_tokens=900, free_bytes=10 * per_row) == 6
    assert planned_rows(backend, 100, 24, thinking_tokens=900, free_bytes=1000 * per_row) == 64
    assert planned_rows(backend, 100, 24) is None  # a CPU: no free-memory reading, no plan
    assert planned_rows(object(), 100, 24, free_bytes=GIB) is None
