"""Memory planning for long (thinking) generations: the KV cache per token and per row, and the rows per batch it
leaves room for, checked against an 8B Llama-3's shape written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from robusteval.models.memory_plan import KVShape, kv_shape, planned_rows, resident_bytes, rows_for

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
    # A CPU is planned from the host's available memory, under --max-memory when given.
    assert 1 <= planned_rows(backend, 100, 24) <= 64
    backend.max_memory = resident_bytes() + 3 * shape.bytes_per_row(100, 0, 24)
    assert planned_rows(backend, 100, 24) == 1
    backend.max_memory = None
    assert planned_rows(object(), 100, 24, free_bytes=GIB) is None


# ------------------------------------------------------------------ what an attack allocates beside the KV cache
def gemma3_270m_config():  # type: ignore[no-untyped-def]
    """Gemma 3 270M's published shape: 18 layers, 4 heads and 1 KV head of 256, 640 wide, 262,144 tokens."""
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(hidden_size=640, num_hidden_layers=18, num_attention_heads=4, num_key_value_heads=1,
                            head_dim=256, intermediate_size=2048, vocab_size=262144)


def test_an_attack_row_on_gemma3_270m_is_its_vocabulary_per_scored_position() -> None:
    from robusteval.models.memory_plan import AttackShape

    kv = kv_shape(gemma3_270m_config(), "float32")
    assert kv.bytes_per_token == 18 * 1 * 256 * 2 * 4 == 36 * KIB
    shape = AttackShape(vocab=262144, hidden=640, layers=18, kv=kv)
    # 80 scored positions: 80 MiB of float32 logits, 160 MiB with their gradient; a prefix of 600 tokens and 40
    # fed tokens of KV cache (36 KiB each); a backward keeps 40 x 640 x 18 x 24 floats of activations.
    assert shape.row_bytes(80, 600, 40, gradient=False) == 80 * MIB + 640 * 36 * KIB
    assert shape.row_bytes(80, 600, 40, gradient=True) == 160 * MIB + 640 * 36 * KIB + 40 * 640 * 18 * 24 * 4
    assert shape.row_bytes(80, 600, 40, gradient=True) == 235_601_920


def test_an_attack_row_on_llama3_8b_in_bf16() -> None:
    from robusteval.models.memory_plan import AttackShape, attack_rows

    kv = kv_shape(llama3_8b_config(), "bfloat16")
    shape = AttackShape(vocab=128256, hidden=4096, layers=32, kv=kv, logit_bytes=2)
    row = shape.row_bytes(200, 700, 100, gradient=True)
    assert row == 200 * 128256 * 2 * 2 + 800 * 128 * KIB + 100 * 4096 * 32 * 24 * 2
    # Half of 8 GiB free for the rows: 4 GiB / ~0.8 GiB = 5 rows; half of 2 GiB: 1.
    assert attack_rows(shape, 8 * GIB, 200, 700, 100, gradient=True) == 4 * GIB // row == 5
    assert attack_rows(shape, 2 * GIB, 200, 700, 100, gradient=True) == 1


def test_memory_budget_on_a_cpu_is_the_available_memory_under_the_limit() -> None:
    from robusteval.models.memory_plan import memory_budget

    assert memory_budget("cpu", None, available=10 * GIB, resident=GIB) == 10 * GIB
    # --max-memory counts the whole process: what it holds already is taken off.
    assert memory_budget("cpu", 4 * GIB, available=10 * GIB, resident=GIB) == 3 * GIB
    assert memory_budget("cpu", 4 * GIB, available=2 * GIB, resident=GIB) == 2 * GIB
    assert memory_budget("cpu", GIB, available=10 * GIB, resident=2 * GIB) == 0
    assert memory_budget("cpu", 4 * GIB) is not None


@pytest.mark.parametrize(("text", "size"), [("4GB", 4 * 10**9), ("4GiB", 4 * GIB), ("512MB", 512 * 10**6),
                                            ("1.5g", 1_500_000_000), (" 300 MiB ", 300 * MIB), ("1000", 1000)])
def test_sizes(text: str, size: int) -> None:
    from robusteval.models.memory_plan import parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["4 apples", "GB", "-1GB", "0"])
def test_a_bad_size_names_the_option(text: str) -> None:
    from robusteval.errors import UserError
    from robusteval.models.memory_plan import parse_size

    with pytest.raises(UserError, match="--max-memory"):
        parse_size(text)


def test_a_small_max_memory_splits_an_attacks_batches(tiny_llama_dir: Path) -> None:
    """Lock-step gradients and candidate scores: three objectives go in one forward with the memory there is, one
    at a time under a --max-memory that leaves room for about one row."""
    from robusteval.attacks.matcha.objective import MatchaObjective, Reference, _chunks
    from robusteval.models import load_backend
    from robusteval.models.memory_plan import ROW_SHARE, attack_shape

    backend = load_backend(f"hf:{tiny_llama_dir}", max_memory="64GB")
    assert backend.max_memory == 64 * 10**9
    prefix = backend.bos_ids + backend.encode("Q: What is 2 + 3?\nA: The answer is 5.\n\n")
    question = backend.encode(" Tom has 3 apples and eats 1. How many are left?")
    reference = Reference(question, backend.encode(" The answer is 2. 3 - 1 = 2."), 5)
    objectives = [MatchaObjective(backend, prefix, backend.encode("Q:"), backend.encode("\nA:"), reference)
                  for _ in range(3)]
    widths = [len(question)] * 3
    assert _chunks(objectives, range(3), widths, gradient=True) == [slice(0, 3)]
    shape = attack_shape(backend)
    assert shape is not None and shape.vocab == backend.embedding_matrix.shape[0]
    row = shape.row_bytes(objectives[0].m, len(prefix), objectives[0].width(len(question)), gradient=True)
    backend.max_memory = resident_bytes() + int(1.5 * row / ROW_SHARE)
    assert _chunks(objectives, range(3), widths, gradient=True) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    # Scoring keeps no gradient: the same limit fits more rows of it.
    assert len(_chunks(objectives, range(3), widths)) < 3
    backend.max_memory = None
    with pytest.raises(Exception, match="--max-memory"):
        load_backend(f"hf:{tiny_llama_dir}", max_memory="lots")
