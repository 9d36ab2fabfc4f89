"""Host-device syncs per lock-step round of the MATCHA attacks (issue 40): on a GPU every read of a device tensor's
value on the host (``float()``, ``int()``, ``.tolist()``, ...) waits for the queued kernels, and the GPU idles while
the host then does Python work. A round reads every example's loss terms in one copy, each example's step choices
in one more, and the allowed tokens' ids once for the whole batch (each example read them all, once per batch).

Counted on the CPU under the device audit (``helpers.devices``: the model on a simulated accelerator), only reads of
tensors on that accelerator, with ``bench/gpubench/host.py``'s counter (the one ``bench/lockstep_host.py`` reports).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from helpers.devices import audit_devices
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack_steps
from robusteval.attacks.matcha.lockstep import run_lockstep
from robusteval.attacks.matcha.objective import MatchaObjective, Reference, gradients, ordinary_token_ids
from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack_steps

BENCH = Path(__file__).resolve().parents[2] / "bench"
QUESTIONS = [" Tom has 3 apples and gets 2 more. How many apples does he have now?",
             " A shop sells 4 pens a day for 6 days. How many pens does it sell in all?",
             " Sara reads 5 pages every morning and 3 every night. How many pages does she read a day?",
             " There are 9 birds on a tree and 4 fly away. How many birds are left on the tree?"]


def _objectives(backend: Any) -> tuple[list[MatchaObjective], list[list[int]]]:
    prefix = backend.bos_ids + backend.encode("Q: 1 + 1 = 2.\nA: The answer is 2.\n\n")
    objectives, questions = [], []
    for text in QUESTIONS:
        question = backend.encode(text)
        reference = Reference(question, backend.encode(" The answer is 5. Tom had 3 and got 2 more, so 5."), 5)
        objectives.append(MatchaObjective(backend, prefix, backend.encode("Q:"), backend.encode("\nA:"), reference))
        questions.append(question)
    return objectives, questions


def _counted(backend: Any, monkeypatch: pytest.MonkeyPatch, attacks: Any) -> tuple[Any, list[Any]]:
    """(the counter, the results) of ``attacks(objectives, questions, allowed)`` run in lock-step under the audit."""
    monkeypatch.syspath_prepend(str(BENCH))
    from gpubench.host import HostSyncs

    with audit_devices(backend) as audit:
        objectives, questions = _objectives(backend)
        allowed = ordinary_token_ids(backend.tokenizer).to(backend.device)  # as MatchaRunner.allowed_tokens
        with HostSyncs(counts=audit.on_accelerator) as counted:
            results = run_lockstep(objectives, attacks(objectives, questions, allowed),
                                   gate=lambda asked: [(True, {})] * len(asked))
    audit.assert_clean()
    return counted, results


def _requests(kinds: str, kind: str) -> int:
    found = re.search(rf"(\d+) {kind}", kinds)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("variant", ["full", "random-locs", "gcg-suffix"])
def test_a_token_attack_round_reads_the_device_once_per_kind_and_example(
        tiny_backend: Any, monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    config = TokenAttackConfig(variant, steps=3, topk_ratio=0.5, n_candidates=2)
    counted, results = _counted(tiny_backend, monkeypatch, lambda objectives, questions, allowed: [
        token_attack_steps(o, q, allowed, config, np.random.default_rng(i))
        for i, (o, q) in enumerate(zip(objectives, questions, strict=True))])
    assert all(len(r.steps) == config.steps + 1 for r in results)
    start, *rounds = counted.rounds
    # The allowed ids read once for the batch (each example read them: 4 reads).
    assert start.syncs == 1, counted.sites
    assert sum(_requests(r.kinds, "gradient") for r in rounds) == len(QUESTIONS) * config.steps
    for r in rounds:
        # One read of every gradient's loss terms, one of every score's, and each example's step choices in one:
        # were 3 float()s per gradient, a tolist() and 3 float()s per score, an int() per chosen position and one
        # per candidate token.
        bound = (_requests(r.kinds, "gradient") > 0) + (_requests(r.kinds, "score") > 0) + _requests(
            r.kinds, "gradient")
        assert r.syncs <= bound, (r, counted.sites)
    # Copies to the device made by the attack: each example's rows and current tokens in one per step (were three:
    # the rows, the current tokens, the rows again to rank them), every score round's candidates in one (were one
    # per example).
    uploads = {site: n for (name, site), n in counted.sites.items() if name in ("tensor", "as_tensor", "to")}
    steps = sum(_requests(r.kinds, "gradient") for r in rounds)
    assert sum(n for site, n in uploads.items() if site.endswith("in token_attack_steps")) == steps, uploads
    scored = sum(1 for r in rounds if _requests(r.kinds, "score"))
    assert sum(n for site, n in uploads.items() if site.endswith("in _chunk_rows")) == scored, uploads


def test_an_embedding_attack_round_reads_the_device_once(tiny_backend: Any, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    config = EmbeddingAttackConfig(steps=3)
    counted, results = _counted(tiny_backend, monkeypatch, lambda objectives, questions, allowed: [
        embedding_attack_steps(o, config, seed=i) for i, o in enumerate(objectives)])
    assert [len(r.steps) for r in results] == [config.steps + 1] * len(QUESTIONS)
    rounds = counted.rounds[1:]
    assert len(rounds) == config.steps + 1
    # The loss terms of every example in one read (were 3 float()s per example and round); the last round also
    # reads each example's largest change once.
    assert [r.syncs for r in rounds] == [1] * config.steps + [1 + len(QUESTIONS)], counted.sites


def test_the_terms_read_on_the_host_are_the_devices_bit_for_bit() -> None:
    from helpers.devices import DeviceAudit
    from robusteval.attacks.matcha.loss import LossTerms, host_terms

    terms = [LossTerms(torch.tensor([0.1, -2.7e-8], dtype=torch.float32), torch.zeros(2, dtype=torch.bfloat16),
                       torch.tensor([3.0, 1e30], dtype=torch.float32)),
             LossTerms(torch.tensor(1 / 3, dtype=torch.bfloat16), torch.tensor(7.1, dtype=torch.float16),
                       torch.tensor(-0.0))]
    audit = DeviceAudit()
    audit.place(*(t for term in terms for t in (term.total, term.cot, term.answer)))
    with audit:
        copies = host_terms(terms)
    audit.assert_clean()
    for original, copied in zip(terms, copies, strict=True):
        pairs = zip((original.total, original.cot, original.answer), (copied.total, copied.cot, copied.answer),
                    strict=True)
        for a, b in pairs:
            assert audit.on_accelerator(a) and not audit.on_accelerator(b)
            assert b.dtype == a.dtype and b.shape == a.shape
            assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def test_the_vocabulary_is_scanned_once_per_tokenizer(tiny_backend: Any) -> None:
    """Every run of the attack (every chunk of a resumed one) scanned the whole vocabulary again (0.25 s for
    Llama 3's 128k entries, the GPU idle meanwhile); a tokenizer given new tokens is scanned again."""
    tokenizer = copy.deepcopy(tiny_backend.tokenizer)
    first = ordinary_token_ids(tokenizer)
    assert ordinary_token_ids(tokenizer) is first
    tokenizer.add_tokens([" zorblat"])
    again = ordinary_token_ids(tokenizer)
    assert again is not first and again.tolist()[:-1] == first.tolist()
    assert again.tolist()[-1] == tokenizer.convert_tokens_to_ids(" zorblat")
    assert torch.equal(ordinary_token_ids(tiny_backend.tokenizer), first)


def test_a_thinking_targets_cot_positions_go_to_the_device_once(tiny_backend: Any) -> None:
    """A thinking target's CoT positions were copied to the device for every row of every round (a sync each)."""
    backend = tiny_backend
    with audit_devices(backend) as audit:
        question = backend.encode(" Tom has 3 apples and gets 2 more. How many apples does he have?")
        continuation = backend.encode(" Tom had 3 and got 2 more, so 5. The answer is 5.")
        reference = Reference(question, continuation, 4, answer_start=len(continuation) - 4, cot_spans=[(1, 9)])
        objective = MatchaObjective(backend, backend.bos_ids + backend.encode("Q: 1 + 1 = 2.\n"),
                                    backend.encode("Q:"), backend.encode("\nA:"), reference)
        embeds = objective.embed_question([question])[0]
        gradients([objective, objective], [embeds, embeds])
        placed = objective.cot_index
        assert placed is not None and audit.on_accelerator(placed)
        gradients([objective], [embeds])
        assert objective.cot_index is placed
    audit.assert_clean()
