"""The dynamic-cache decoder (models/decode.py's DynamicDecoder) against a plain transformers decode loop, and the
static path's load-time self-check sized to the backend's batch (issue 40).

On an H100 the dynamic path measured 130.8 ms/step at batch 1; a step must cost what a plain loop's forward does.
The per-step work is counted (operations dispatched, values read back on the host, forwards), never timed.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from robusteval.models.hf import HFBackend
from robusteval.models.static_decode import MIN_LENGTH_BUCKET

PREFIX = "Q: What is 2 + 3?\nA: The answer is 5.\n\n"
#: Operations that read a tensor's value on the host: on a GPU each waits for every kernel queued before it.
HOST_READS = ("aten::_local_scalar_dense", "aten::item", "aten::is_nonzero")


def _load(model_dir: Path, batch_size: int, decoder: str = "dynamic", **options: Any) -> HFBackend:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return HFBackend(model, tokenizer, f"hf:{model_dir.name}", batch_size=batch_size, decoder=decoder, **options)


@pytest.fixture(scope="module")
def backend(tiny_trained_dir: Path) -> HFBackend:
    return _load(tiny_trained_dir, 4)


def _operations(fn: Callable[[], Any]) -> Counter[str]:
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return Counter({event.key: event.count for event in prof.key_averages()})


@pytest.mark.parametrize("questions", [["Q: 7 * 8?\nA:"], ["Q: 7 * 8?\nA:", "Q: 9 - 2?\nA:"]],
                         ids=["one row", "two rows of one length"])
def test_a_step_costs_what_a_plain_forward_does(backend: HFBackend, questions: list[str]) -> None:
    """Rows without a padding hole: the step is the model's forward of one token per row over the grown cache,
    as in a plain loop, with no value read back on the host (the old step grew a 2-D mask of ones each step,
    which transformers summed and read back: a device synchronisation per step on a GPU, 30 more operations)."""
    suffixes = [backend.encode(q) for q in questions]
    assert len({len(s) for s in suffixes}) == 1
    decoder = backend.dynamic_decoder(backend._padded(backend.encode(PREFIX), suffixes))
    with torch.no_grad():
        tokens = decoder.start().argmax(-1)
        tokens = decoder.step(tokens).argmax(-1)
    size = len(suffixes)
    cache, positions = copy.deepcopy(decoder.past), decoder.next_pos.view(size, 1).clone()

    def plain() -> torch.Tensor:
        out = backend.model(input_ids=tokens.view(size, 1), position_ids=positions, use_cache=True,
                            logits_to_keep=1, **{backend._cache_kwarg: cache})
        return out.logits[:, -1, :]

    expected = plain()
    cache = copy.deepcopy(decoder.past)
    raw = _operations(plain)
    ours_logits: list[torch.Tensor] = []
    ours = _operations(lambda: ours_logits.append(decoder.step(tokens)))
    assert not any(ours[name] for name in HOST_READS), {name: ours[name] for name in HOST_READS}
    extra = sum(ours.values()) - sum(raw.values())
    assert extra <= 4, f"{extra} operations more than the plain forward: {(ours - raw).most_common(8)}"
    assert decoder.forwards == 3  # the prompt, then one forward per step
    torch.testing.assert_close(ours_logits[0], expected, rtol=0, atol=0)


def test_greedy_decode_equals_a_plain_loop_token_for_token(backend: HFBackend) -> None:
    """The mask left out for rows without holes changes nothing: one row after a cached prefix decodes exactly as
    a plain transformers loop over the whole prompt (no mask, no prefix cache)."""
    from transformers import DynamicCache

    prefix = backend.encode(PREFIX)
    suffix = backend.encode("Q: How many legs do 3 cats have?\nA:")
    (row,) = backend.decode_batch(prefix, [suffix], max_new_tokens=12)
    ids, cache, expected = torch.tensor([prefix + suffix]), DynamicCache(), []
    with torch.no_grad():
        for _ in range(12):
            out = backend.model(input_ids=ids, use_cache=True, logits_to_keep=1, **{backend._cache_kwarg: cache})
            token = int(out.logits[0, -1].argmax())
            if token in backend.eos_ids:
                break
            expected.append(token)
            ids = torch.tensor([[token]])
    assert len(expected) >= 4 and row.token_ids == expected


def test_rows_with_a_hole_still_mask_it(backend: HFBackend) -> None:
    """Rows of different lengths keep their padding hole masked: each decodes as it does alone."""
    questions = ["Q: 7 * 8?\nA:", "Q: Tom has 12 apples and gives 5 away. How many are left?\nA:"]
    prefix = backend.encode(PREFIX)
    together = backend.decode_batch(prefix, [backend.encode(q) for q in questions], max_new_tokens=10)
    alone = [backend.decode_batch(prefix, [backend.encode(q)], max_new_tokens=10)[0] for q in questions]
    assert [r.token_ids for r in together] == [r.token_ids for r in alone]


# ------------------------------------------------------------------ the static path's load-time self-check
@pytest.mark.parametrize(("batch_size", "rows"), [(1, 1), (4, 2)])
def test_the_self_check_builds_no_second_row_bucket(tiny_trained_dir: Path, batch_size: int, rows: int) -> None:
    """A batch-1 backend's warm-up builds (and on a GPU compiles and captures) exactly one bucket: the self-check
    decodes one row there (it decoded two, which built a second bucket: 76.5 s of load on an H100 against 33.4 s
    at batch 8); from batch 2 up it keeps two rows of different lengths, so the padding hole is checked."""
    backend = _load(tiny_trained_dir, batch_size, decoder="static", step_compile="eager")
    lengths: list[list[int]] = []
    padded = backend._padded

    def recorded(prefix_ids: Any, suffixes: Any) -> Any:
        batch = padded(prefix_ids, suffixes)
        lengths.append(list(batch.lengths))
        return batch

    backend._padded = recorded  # type: ignore[method-assign]
    backend.warm_up(MIN_LENGTH_BUCKET)
    engine = backend._static
    assert engine is not None and engine.failed is None and engine.check_error is not None
    assert list(engine.caches) == [(batch_size, MIN_LENGTH_BUCKET)]
    checked = lengths[-1]  # the warm-up's own row, then the self-check's rows
    assert len(checked) == rows
    assert rows == 1 or len(set(checked)) == rows, f"the self-check's rows {checked} leave no padding hole"
