"""Device mismatches that only a GPU would reveal, found on CPU by ``helpers.devices.audit_devices``.

The audit simulates an accelerator (``cpu:0``) by taint tracking; these tests pin down its rules (what CUDA
accepts, what it rejects), show it catches the bug the MATCHA token attack once had (a host tensor of
allowed tokens indexed by top-k indices computed on the model's device), and run the white-box paths of
``HFBackend`` and the MATCHA attacks under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from helpers.devices import ACCELERATOR, audit_devices
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack
from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids
from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack
from robusteval.models.hf import HFBackend

Pattern = Callable[[Any, torch.Tensor], object]


def _question_gradient(backend: Any) -> tuple[list[int], torch.Tensor]:
    """(question ids, d loss / d question embeddings [Lq, H]) from a real forward and backward pass."""
    prefix, question = backend.prompt_ids("Q: 1 + 1 = 2.\n", "Q: Tom has 3 apples and gets 2 more.\nA:")
    embeds = backend.embed(torch.tensor([question])).detach().requires_grad_(True)
    logits = backend.forward(prefix, embeds)
    (grad,) = torch.autograd.grad(logits[0, -1].log_softmax(-1)[:10].sum(), embeds)
    return question, grad[0]


def test_the_old_token_attack_indexing_is_reported(tiny_backend: Any) -> None:
    # The steps of token_attack before the fix: `allowed` (from ordinary_token_ids) stays on the host while
    # the scores, and so the top-k indices, live on the model's device.
    with audit_devices(tiny_backend) as audit:
        allowed = ordinary_token_ids(tiny_backend.tokenizer)
        embedding_matrix = tiny_backend.embedding_matrix.detach() * tiny_backend.embed_scale
        allowed_vectors = embedding_matrix[allowed]  # fine: host indices into a device tensor
        _, grad = _question_gradient(tiny_backend)
        positions = torch.tensor([1, 3])
        scores = grad[positions] @ allowed_vectors.T
        best_tokens = allowed[(-scores).topk(4, dim=1).indices]  # the bug: device indices into a host tensor
    assert best_tokens.shape == (2, 4)
    (violation,) = audit.violations
    assert violation.op == "aten.index"
    assert violation.arguments == f"self=host[{len(allowed)}], indices[0]=accelerator[2, 4]"
    assert violation.where[-1].startswith("tests/attacks/test_device_audit.py:")
    assert "in test_the_old_token_attack_indexing_is_reported" in violation.where[-1]
    with pytest.raises(AssertionError, match=r"(?s)1 device mismatch.*aten\.index\(self=host"):
        audit.assert_clean()

    # The fix: move `allowed` to the embeddings' device first.
    with audit_devices(tiny_backend) as audit:
        allowed = ordinary_token_ids(tiny_backend.tokenizer).to(tiny_backend.embedding_matrix.device)
        _, grad = _question_gradient(tiny_backend)
        scores = grad[torch.tensor([1, 3])] @ tiny_backend.embedding_matrix[allowed].T
        allowed[scores.topk(4, dim=1).indices]
    audit.assert_clean()


def _index_put_device_values(backend: Any, w: torch.Tensor) -> None:
    target = torch.zeros(4, w.shape[1], device=backend.device)
    target[torch.tensor([1, 2])] = w[:2]
    target[torch.tensor([True, False, False, True])] = 0.5


def _copy_into_device(backend: Any, w: torch.Tensor) -> None:
    target = torch.empty(3, w.shape[1], device=backend.device)
    target.copy_(torch.ones(3, w.shape[1]))
    target[1:] = torch.zeros(2, w.shape[1])  # basic indexing: a copy_
    target[0] = torch.arange(w.shape[1])


def _back_on_host(backend: Any, w: torch.Tensor) -> None:
    host = (w[:3] * 2).cpu()
    host + torch.ones(3, w.shape[1])
    host.numpy()
    w[:2].to("cpu", torch.float64) @ torch.ones(w.shape[1], 1, dtype=torch.float64)
    torch.ones(2) * w[0, 0].item()
    w[:2].tolist()


ALLOWED: dict[str, Pattern] = {
    "device tensor indexed by host indices": lambda b, w: (w[torch.tensor([1, 2])], w[[0, 3]], w[torch.tensor(1)]),
    "index_put with host indices": _index_put_device_values,
    "copy_ from the host into a device tensor": _copy_into_device,
    ".cpu() / .to('cpu') then host ops": _back_on_host,
    "host scalars with device tensors": lambda b, w: (torch.tensor(2.0) * w, w * 2.0,
                                                      torch.where(w > 0, w, torch.tensor(0.0))),
    "tensors created on the device": lambda b, w: (
        torch.arange(3, device=b.device) + torch.tensor([1, 2, 3], device=b.device) + torch.zeros(3, device=w.device),
        torch.ones(3).to(w.device) + w[:3, 0],
        torch.as_tensor(np.ones(3), dtype=w.dtype, device=b.device) + w[:3, 0],
        w.new_tensor([1.0]) + w[0],
        torch.ones(3).to(w) + w[:3, 0],
    ),
}

REJECTED: dict[str, tuple[str, Pattern]] = {
    "host tensor indexed by device indices": ("aten.index", lambda b, w: torch.arange(10)[(w[:2, 0] > 0).long()]),
    "elementwise host + device": ("aten.add", lambda b, w: w[:2] + torch.ones(2, w.shape[1])),
    "concatenation": ("aten.cat", lambda b, w: torch.cat([w[:1], torch.zeros(1, w.shape[1])])),
    "matmul": ("aten.mm", lambda b, w: torch.ones(2, w.shape[1]) @ w.T),
    "0-dim device tensor with a host tensor": ("aten.mul", lambda b, w: torch.ones(3) * w[0, 0]),
    "index_put of host values": ("aten.index_put_", lambda b, w: w.clone().__setitem__(torch.tensor([1]),
                                                                                       torch.ones(1, w.shape[1]))),
    "embedding lookup with host ids": ("aten.embedding",
                                       lambda b, w: torch.nn.functional.embedding(torch.tensor([1, 2]), w)),
    "default-device factory": ("aten.add", lambda b, w: torch.arange(w.shape[1]) + w[0]),
    "CPU generator for a device op": ("aten.randint", lambda b, w: torch.randint(
        0, 5, (3,), generator=torch.Generator().manual_seed(0), device=b.device)),
    "numpy() of a device tensor": ("Tensor.numpy", lambda b, w: w.detach().numpy()),
}


@pytest.mark.parametrize("pattern", list(ALLOWED.values()), ids=list(ALLOWED))
def test_what_cuda_accepts_is_not_reported(tiny_backend: Any, pattern: Pattern) -> None:
    with audit_devices(tiny_backend) as audit:
        pattern(tiny_backend, tiny_backend.embedding_matrix)
    audit.assert_clean()


@pytest.mark.parametrize(("op", "pattern"), list(REJECTED.values()), ids=list(REJECTED))
def test_what_cuda_rejects_is_reported(tiny_backend: Any, op: str, pattern: Pattern) -> None:
    with audit_devices(tiny_backend) as audit:
        pattern(tiny_backend, tiny_backend.embedding_matrix)
    assert [v.op for v in audit.violations] == [op]
    assert "accelerator" in audit.violations[0].arguments


def _sliding_window_backend(tiny_backend: Any, attention: str) -> HFBackend:
    """A tiny Gemma-3 (sliding-window layers, scaled embeddings) on the tiny tokenizer: HFBackend then builds
    its own per-layer masks (``_attention``), a path the Llama never takes."""
    from robusteval.models.tiny import tiny_gemma3

    tokenizer = tiny_backend.tokenizer
    backend = HFBackend(tiny_gemma3(tokenizer, attention=attention), tokenizer, f"tiny-gemma3-{attention}")
    assert backend.explicit_masks and backend.additive_masks == (attention == "eager")
    return backend


@pytest.mark.parametrize("model", ["llama", "gemma3-sdpa", "gemma3-eager"])
def test_backend_forward_backward_and_decoding_run_clean(tiny_backend: Any, model: str) -> None:
    backend = tiny_backend if model == "llama" else _sliding_window_backend(tiny_backend, model.split("-")[1])
    with audit_devices(backend) as audit:
        assert backend.device == ACCELERATOR
        question, grad = _question_gradient(backend)
        assert audit.on_accelerator(grad)
        prefix = backend.prompt_ids("Q: 1 + 1 = 2.\n", "")[0]
        suffixes = [question, question[:3]]
        embeds = backend.embed(torch.tensor([question])).detach()
        try:
            for cached in (True, False):  # with the prefix's KV cache, and re-encoding the prefix each time
                backend.use_prefix_cache = cached
                greedy = backend.decode_batch(prefix, suffixes, max_new_tokens=4, stops=[(".",), ()])
                sampled = backend.decode_batch(prefix, suffixes, max_new_tokens=4, temperatures=[0.7, 1.0],
                                               top_ps=[0.9, 1.0], seeds=[1, 2])
                backend.decode_batch(prefix, embeds, max_new_tokens=3)
                assert len(greedy) == len(sampled) == 2
        finally:
            backend.use_prefix_cache = True
        backend.continuation_logprobs("Q: What is 2 + 3?\nA:", [" The", " 5"], prefix="Q: 1 + 1 = 2.\n")
    audit.assert_clean()


def test_matcha_attacks_run_clean(tiny_backend: Any) -> None:
    backend = tiny_backend
    with audit_devices(backend) as audit:
        question = backend.encode(" Tom has 3 apples and gets 2 more. How many apples does he have?")
        reference = Reference(question, backend.encode(" The answer is 5. Tom had 3 and got 2."), 5)
        prefix = backend.bos_ids + backend.encode("Q: 1 + 1 = 2.\nA: The answer is 2.\n\n")
        objective = MatchaObjective(backend, prefix, backend.encode("Q:"), backend.encode("\nA:"), reference)
        allowed = ordinary_token_ids(backend.tokenizer)  # on the host, as MatchaRunner.allowed_tokens once was
        for variant, candidates in [("full", 1), ("full", 3), ("gcg-suffix", 2), ("random-locs", 2)]:
            token_attack(objective, question, allowed, TokenAttackConfig(variant, steps=2, n_candidates=candidates),
                         np.random.default_rng(0), lambda ids: (True, {}))
        embedding_attack(objective, EmbeddingAttackConfig(steps=2), seed=0)
    audit.assert_clean()


def test_the_audit_leaves_no_trace(tiny_backend: Any) -> None:
    device, prefixes = tiny_backend.device, tiny_backend._prefixes
    with pytest.raises(RuntimeError, match="inside"), audit_devices(tiny_backend) as audit:
        assert tiny_backend.embedding_matrix.device == ACCELERATOR
        assert torch.ones(2).device == torch.device("cpu")
        raise RuntimeError("inside")
    assert not audit.violations
    assert tiny_backend.device == device and tiny_backend._prefixes is prefixes
    assert tiny_backend.embedding_matrix.device == torch.device("cpu")
    assert torch.tensor([1.0], device="cpu:0").device == torch.device("cpu")  # no mode left active
