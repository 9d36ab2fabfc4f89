"""Long prompts on the hf backend: memory in proportion to the KV cache, not to its square (issue 22).

transformers expands a 2-D padding mask to a [B, 1, Q, K] mask whenever it cannot leave causality to SDPA
(a cached prefix, a padding hole) and torch's CPU SDPA makes it float: a 10k-token prompt asked for tens of GB.
Rows are now split to a mask budget and a row too long for it is fed without its cached prefix (no mask at all):
doubling the prompt must at most about double the largest allocation. Prompts longer than the context are
refused with one line, never run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from helpers.memory import LargestAllocation, kv_cache_bytes
from robusteval.errors import UserError
from robusteval.models import GenerationRequest
from robusteval.models.context import context_length


def _prefix(backend: Any) -> list[int]:
    return backend.bos_ids + backend.encode("Q: 2 + 3 = ?\nA: The answer is 5. 2 + 3 = 5.\n\n")


def _largest_forward(backend: Any, tokens: int) -> LargestAllocation:
    """The largest allocation of a forward and backward over one row of ``tokens`` tokens after a cached prefix,
    and of a padded forward over that row and one half as long (the attack's gradient and scoring passes)."""
    ids = (backend.encode(" apple pie") * tokens)[:tokens]
    with LargestAllocation() as seen:
        row = backend.embed(torch.tensor(ids)).detach().requires_grad_(True)
        logits = backend.forward(_prefix(backend), [row], logits_to_keep=8)
        torch.autograd.grad(logits.float().logsumexp(-1).sum(), row)
        with torch.no_grad():
            backend.forward(_prefix(backend), [row.detach(), row.detach()[: tokens // 2]], logits_to_keep=8)
    return seen


def test_forward_memory_grows_with_the_prompt_not_its_square(tiny_backend: Any) -> None:
    short, long = _largest_forward(tiny_backend, 1800), _largest_forward(tiny_backend, 3600)
    # Before: a float [B, 1, Q, K] mask, 4x larger for a prompt twice as long (52 MB at 3600 tokens).
    assert long.bytes <= 2.5 * short.bytes, (short.op, long.op)
    assert long.bytes < 3600 * 3600 // 2, long.op  # under half a boolean [Q, Q] mask
    assert long.bytes <= 4 * kv_cache_bytes(tiny_backend.model, 3600 + len(_prefix(tiny_backend))), long.op


def test_decoding_a_long_prompt_keeps_memory_linear(tiny_backend: Any) -> None:
    ids = (tiny_backend.encode(" apple pie") * 3600)[:3600]
    with LargestAllocation() as seen:
        rows = tiny_backend.decode_many(_prefix(tiny_backend), [ids, ids[:1800], ids[:40]], max_new_tokens=3)
    assert [len(r.token_ids) for r in rows] == [3, 3, 3] or all(r.finish_reason for r in rows)
    assert seen.bytes < 3600 * 3600 // 2, seen.op


def test_long_rows_give_what_they_give_with_the_cached_prefix(tiny_backend: Any) -> None:
    """A row fed with its prefix inline (no mask) has the logits it has after the cached prefix."""
    ids = (tiny_backend.encode(" apple pie") * 3000)[:3000]
    row = tiny_backend.embed(torch.tensor(ids))
    prefix = _prefix(tiny_backend)
    assert tiny_backend._inline_prefix(len(prefix), [len(ids)])
    with torch.no_grad():
        inline = tiny_backend.forward(prefix, [row], logits_to_keep=4)
        budget = tiny_backend.mask_budget
        try:
            tiny_backend.mask_budget = 1 << 40  # cached prefix and a [1, 1, Q, K] mask, as before
            cached = tiny_backend.forward(prefix, [row], logits_to_keep=4)
        finally:
            tiny_backend.mask_budget = budget
    torch.testing.assert_close(inline, cached, rtol=1e-4, atol=1e-4)


def test_a_prompt_longer_than_the_context_is_refused_in_one_line(tiny_backend: Any) -> None:
    assert context_length(tiny_backend.model, tiny_backend.tokenizer) == 4096 == tiny_backend.context_length
    prompt = " apple pie" * 2100
    with pytest.raises(UserError, match=r"^request 0: prompt is [\d,]+ tokens \+ 8 to generate, over the "
                                        r"model's 4,096-token context$"):
        tiny_backend.generate([GenerationRequest(prompt, max_new_tokens=8)])
