"""The static-KV-cache decoder (models/static_decode.py) against the dynamic one, on CPU.

Every equality is token for token: the static path (prefix KV copied into a StaticCache, prompt prefilled, each
step fed through the same compiled-or-not function) must choose exactly what DynamicDecoder chooses. Tests that
compare also check the static path really ran (``engine.steps``), since a silent fallback would compare the
dynamic decoder with itself. The CUDA-graph mode itself needs a GPU; here the step is traced with
``torch.compile(backend="eager", fullgraph=True)`` (a graph break raises, and the backend falls back).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._dynamo.utils import counters

from robusteval.errors import UserError
from robusteval.models import GenerationRequest, load_backend
from robusteval.models.hf import HFBackend
from robusteval.models.static_decode import MIN_LENGTH_BUCKET, StaticDecoder, length_bucket, row_bucket

PREFIX = "Q: What is 2 + 3?\nA: The answer is 5. 2 + 3 = 5.\n\nQ: What is 4 + 4?\nA: The answer is 8. 4 + 4 = 8.\n\n"
PROMPTS = [
    "Q: What is 7 * 8?\nA:",
    "Q: How many eggs are left if she eats three of sixteen every morning and bakes four?\nA:",
    "Q: 2+2?\nA:",
    "Q: What is 11 - 4?\nA:",
    "Q: Tom has 12 apples and gives 5 away. How many are left?\nA:",
]
FAILED = "static KV-cache decoding failed"


def _backend(model_dir: Path, decoder: str, *, prefix_cache: bool = True, step_compile: str = "off",
             warm_up: int | None = None) -> HFBackend:
    """An HFBackend built directly (no load-time warm-up unless ``warm_up`` gives a cache length)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    backend = HFBackend(model, tokenizer, f"hf:{model_dir.name}", batch_size=4, use_prefix_cache=prefix_cache,
                        decoder=decoder, step_compile=step_compile)
    if warm_up:
        backend.warm_up(warm_up)
    return backend


def _requests(max_new_tokens: int = 16, prompts: list[str] = PROMPTS, **kwargs: Any) -> list[GenerationRequest]:
    return [GenerationRequest(p, max_new_tokens=max_new_tokens, prefix=PREFIX, **kwargs) for p in prompts]


def _same(reference: HFBackend, static: HFBackend, requests: list[GenerationRequest]) -> list[Any]:
    """Generate with both; assert identical rows (token ids, texts, finish reasons) and that the static path ran."""
    steps = static._static.steps
    expected = reference.generate(requests)
    got = static.generate(requests)
    assert [(g.text, g.finish_reason, g.n_tokens) for g in got] == \
        [(g.text, g.finish_reason, g.n_tokens) for g in expected]
    # The token ids themselves, through the batched decode loop generate() uses.
    prefix_ids = static.prompt_ids(PREFIX, requests[0].prompt)[0]
    rows = {
        "suffixes": [static.prompt_ids(PREFIX, r.prompt)[1] for r in requests],
        "max_new_tokens": requests[0].max_new_tokens,
        "temperatures": [r.temperature for r in requests],
        "top_ps": [r.top_p for r in requests],
        "stops": [r.stop for r in requests],
        "seeds": [r.seed for r in requests],
    }
    ids = [(r.token_ids, r.text, r.finish_reason) for r in static.decode_many(prefix_ids, **rows)]
    assert ids == [(r.token_ids, r.text, r.finish_reason) for r in reference.decode_many(prefix_ids, **rows)]
    assert static._static.failed is None and static.decoder == "static"
    assert static._static.steps > steps, "the static decoder never stepped"
    return got


def _status_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "robusteval" and text in r.getMessage()]


@pytest.fixture(scope="module")
def dynamic(tiny_trained_dir: Path) -> HFBackend:
    return _backend(tiny_trained_dir, "dynamic")


@pytest.fixture(scope="module")
def static(tiny_trained_dir: Path) -> HFBackend:
    return _backend(tiny_trained_dir, "static")


# ------------------------------------------------------------------ exactness (uncompiled static cache)
@pytest.mark.parametrize("prefix_cache", [True, False])
def test_static_equals_dynamic_for_rows_of_different_lengths(tiny_trained_dir: Path, prefix_cache: bool) -> None:
    dynamic = _backend(tiny_trained_dir, "dynamic", prefix_cache=prefix_cache)
    static = _backend(tiny_trained_dir, "static", prefix_cache=prefix_cache)
    assert dynamic.decoder == "dynamic" and static.decoder == "static"
    # Five prompts of different lengths in batches of 4: a full batch and one with three dummy rows.
    lengths = {len(static.prompt_ids(PREFIX, p)[1]) for p in PROMPTS}
    assert len(lengths) >= 4
    got = _same(dynamic, static, _requests(max_new_tokens=24))
    assert all(g.n_tokens for g in got)
    assert static._static.prefills == 4  # one per batch of 4, in generate() and in decode_many()


def test_prefix_kv_is_copied_in_and_the_cached_prefix_is_not_mutated(dynamic: HFBackend, static: HFBackend) -> None:
    prefix_ids, _ = static.prompt_ids(PREFIX, PROMPTS[0])
    entry = static.prefix_cache(prefix_ids)
    before = [(layer.keys.clone(), layer.values.clone()) for layer in entry.cache.layers]
    prefills = static._static.prefills
    _same(dynamic, static, _requests(max_new_tokens=8))
    assert static._static.prefills > prefills
    assert static.prefix_cache(prefix_ids) is entry  # not re-encoded
    for layer, (keys, values) in zip(entry.cache.layers, before, strict=True):
        assert torch.equal(layer.keys, keys) and torch.equal(layer.values, values)
        assert layer.keys.shape[0] == 1  # never expanded in place to the batch


def test_embedding_rows_of_different_lengths(dynamic: HFBackend, static: HFBackend) -> None:
    """Attacks decode from embeddings [L_i, H] of different lengths: same tokens on both paths."""
    prefix_ids, _ = static.prompt_ids(PREFIX, PROMPTS[0])
    rows = [static.embed(torch.tensor(static.prompt_ids(PREFIX, p)[1])) for p in PROMPTS[:3]]
    expected = dynamic.decode_batch(prefix_ids, rows, max_new_tokens=12)
    steps = static._static.steps
    got = static.decode_batch(prefix_ids, rows, max_new_tokens=12)
    assert [r.token_ids for r in got] == [r.token_ids for r in expected]
    assert static._static.steps > steps


def test_stop_strings(dynamic: HFBackend, static: HFBackend) -> None:
    free = dynamic.generate(_requests(max_new_tokens=24))
    # A stop string from the middle of each row's own text, so every row stops early, at a different step.
    stops = []
    for g in free:
        words = g.text.split()
        assert len(words) >= 3, g.text
        stops.append((words[len(words) // 2],))
    requests = [GenerationRequest(p, max_new_tokens=24, prefix=PREFIX, stop=s) for p, s in zip(PROMPTS, stops,
                                                                                                    strict=True)]
    got = _same(dynamic, static, requests)
    assert sum(g.finish_reason == "stop" for g in got) >= 3


def test_seeded_sampling(dynamic: HFBackend, static: HFBackend) -> None:
    requests = _requests(max_new_tokens=12, temperature=0.9, top_p=0.95, seed=7)
    got = _same(dynamic, static, requests)
    greedy = static.generate(_requests(max_new_tokens=12))
    assert [g.text for g in got] != [g.text for g in greedy]  # it did sample


# ------------------------------------------------------------------ buckets
def test_length_and_row_buckets() -> None:
    assert length_bucket(1) == MIN_LENGTH_BUCKET
    assert length_bucket(MIN_LENGTH_BUCKET + 1) == 2 * MIN_LENGTH_BUCKET
    assert length_bucket(300, [1024]) == 1024  # a built bucket that fits is reused
    assert length_bucket(2000, [1024]) == 2048
    assert length_bucket(100, [256, 1024]) == 256
    assert (row_bucket(1, 8), row_bucket(8, 8), row_bucket(9, 8)) == (8, 8, 16)


# ------------------------------------------------------------------ the compiled step
@pytest.fixture(scope="module")
def compiled(tiny_trained_dir: Path) -> tuple[HFBackend, int]:
    """A static backend whose step is traced by dynamo (fullgraph, eager backend), warmed up for 256 slots;
    with the number of graphs dynamo had compiled before it."""
    # A test run earlier in the session may have compiled the same step for the same shapes: dynamo would reuse
    # that graph and count none here.
    torch._dynamo.reset()
    before = counters["stats"]["unique_graphs"]
    backend = _backend(tiny_trained_dir, "static", step_compile="eager", warm_up=MIN_LENGTH_BUCKET)
    return backend, before


def test_warm_up_compiles_the_step_as_one_graph(compiled: tuple[HFBackend, int], dynamic: HFBackend) -> None:
    backend, before = compiled
    engine = backend._static
    assert engine.failed is None, engine.failed  # fullgraph=True: a graph break would have raised
    assert counters["stats"]["unique_graphs"] == before + 1  # compiled at warm-up, before any request
    assert engine.steps == 6 and list(engine.caches) == [(4, MIN_LENGTH_BUCKET)]
    _same(dynamic, backend, _requests(max_new_tokens=16))
    assert counters["stats"]["unique_graphs"] == before + 1


def test_bucket_is_reused_and_a_longer_cache_compiles_once(compiled: tuple[HFBackend, int],
                                                          dynamic: HFBackend) -> None:
    backend, _ = compiled
    engine = backend._static
    graphs = counters["stats"]["unique_graphs"]
    # Other prompt lengths (and batch sizes: one row is padded with three dummy rows) in the same bucket.
    for prompts in (PROMPTS[2:4], PROMPTS[1:2], [PROMPTS[4] + " Think step by step."]):
        _same(dynamic, backend, _requests(max_new_tokens=10, prompts=prompts))
    assert counters["stats"]["unique_graphs"] == graphs, "a call in the warmed-up bucket recompiled"
    assert list(engine.caches) == [(4, MIN_LENGTH_BUCKET)]
    # More slots than the bucket holds: one new bucket, one new graph (so the counter above can see one).
    _same(dynamic, backend, _requests(max_new_tokens=MIN_LENGTH_BUCKET, prompts=PROMPTS[:1], stop=("\u2603",)))
    assert list(engine.caches) == [(4, MIN_LENGTH_BUCKET), (4, 2 * MIN_LENGTH_BUCKET)]
    assert counters["stats"]["unique_graphs"] == graphs + 1


# ------------------------------------------------------------------ choosing and falling back
def test_auto_stays_dynamic_on_cpu(tiny_trained_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="robusteval")
    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    assert isinstance(backend, HFBackend)
    assert backend.decoder == "dynamic" and backend._static is None
    assert not _status_lines(caplog, "static")


def test_load_backend_threads_the_decoder_and_warms_up(tiny_trained_dir: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="robusteval")
    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu", batch_size=2, decoder="static",
                           step_compile="eager")
    assert isinstance(backend, HFBackend) and backend.decoder == "static"
    assert backend._static.steps == 6 and len(_status_lines(caplog, "decode step ready")) == 1
    assert load_backend(f"hf:{tiny_trained_dir}", device="cpu", decoder="dynamic").decoder == "dynamic"


@pytest.mark.parametrize(("decoder", "step_compile"), [("fast", "auto"), ("static", "cudagraphs")])
def test_bad_decoder_options_are_user_errors(tiny_trained_dir: Path, decoder: str, step_compile: str) -> None:
    with pytest.raises(UserError):
        _backend(tiny_trained_dir, decoder, step_compile=step_compile)


def _tiny_gemma3(tokenizer: Any, decoder: str) -> HFBackend:
    """A tiny Gemma-3 (a sliding-window layer) on the tiny tokenizer."""
    from robusteval.models.tiny import tiny_gemma3

    return HFBackend(tiny_gemma3(tokenizer), tokenizer, "tiny-gemma3", batch_size=4, decoder=decoder)


def test_sliding_window_model_falls_back_to_dynamic(dynamic: HFBackend, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="robusteval")
    backend = _tiny_gemma3(dynamic.tokenizer, "static")
    assert backend.decoder == "dynamic" and backend._static is None
    lines = _status_lines(caplog, "tiny-gemma3: decoding with the dynamic KV cache")
    assert len(lines) == 1 and "sliding-window" in lines[0]
    reference = _tiny_gemma3(dynamic.tokenizer, "dynamic")
    requests = _requests(max_new_tokens=6)
    assert [g.text for g in backend.generate(requests)] == [g.text for g in reference.generate(requests)]
    assert len(_status_lines(caplog, "decoding with the dynamic KV cache")) == 1  # said once, at load


def test_compile_failure_falls_back_once(tiny_trained_dir: Path, dynamic: HFBackend, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="robusteval")

    def cannot_compile(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch, "compile", cannot_compile)
    backend = _backend(tiny_trained_dir, "static", step_compile="eager", warm_up=MIN_LENGTH_BUCKET)
    assert backend.decoder == "dynamic" and "no compiler here" in (backend._static.failed or "")
    for _ in range(2):
        got = backend.generate(_requests(max_new_tokens=8))
        assert [g.text for g in got] == [g.text for g in dynamic.generate(_requests(max_new_tokens=8))]
    lines = _status_lines(caplog, FAILED)
    assert len(lines) == 1 and "no compiler here" in lines[0]
    assert not _status_lines(caplog, "decode step ready")


def test_failure_in_the_middle_of_a_batch_is_replayed_exactly(
        tiny_trained_dir: Path, dynamic: HFBackend, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A step that fails after some tokens (a CUDA graph capture that fails, say): the batch in flight
    continues on a DynamicDecoder fed the same tokens, with exactly the dynamic results; later batches are
    dynamic; it is said once."""
    caplog.set_level(logging.INFO, logger="robusteval")
    calls = {"n": 0}

    def flaky_compile(function: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            calls["n"] += 1
            if calls["n"] > 5:
                raise RuntimeError("CUDA graph capture failed")
            return function(*args)
        return run

    monkeypatch.setattr(torch, "compile", flaky_compile)
    backend = _backend(tiny_trained_dir, "static", step_compile="eager")
    requests = _requests(max_new_tokens=16, temperature=0.9, seed=3)
    got = backend.generate(requests)
    assert backend._static.steps == 5 and backend.decoder == "dynamic"
    assert [g.text for g in got] == [g.text for g in dynamic.generate(requests)]
    backend.generate(_requests(max_new_tokens=4))
    assert backend._static.steps == 5
    assert len(_status_lines(caplog, FAILED)) == 1


def test_a_static_path_that_disagrees_with_the_dynamic_cache_is_given_up_at_load(
        tiny_trained_dir: Path, dynamic: HFBackend, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The CUDA-graph path cannot run in CI: a static path that decodes wrongly where it does run (here: the
    cached prefix never copied in) is caught by the load-time self-check and never used."""
    caplog.set_level(logging.INFO, logger="robusteval")
    monkeypatch.setattr(StaticDecoder, "_copy_prefix", lambda self, prefix: None)
    backend = _backend(tiny_trained_dir, "static", step_compile="eager", warm_up=MIN_LENGTH_BUCKET)
    assert backend.decoder == "dynamic" and "self-check" in (backend._static.failed or "")
    lines = _status_lines(caplog, FAILED)
    assert len(lines) == 1 and "differ from the dynamic cache" in lines[0]
    requests = _requests(max_new_tokens=8)
    assert [g.text for g in backend.generate(requests)] == [g.text for g in dynamic.generate(requests)]


def test_bf16_sized_noise_passes_the_self_check_and_a_lost_prefix_does_not(tiny_trained_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """On an H100 a correct compiled bf16 step's logits differed from the dynamic cache's by 4.6% of the largest
    logit (the noise tail of a 128k vocabulary) and the old max-difference check gave the static path up. Noise
    of 4% RMS on every logit must pass; the relative error is kept; a lost prefix still fails."""
    from robusteval.models import static_decode

    generator = torch.Generator().manual_seed(0)
    exact_step = StaticDecoder.step

    def noisy_step(self: StaticDecoder, tokens: torch.Tensor) -> torch.Tensor:
        logits = exact_step(self, tokens)
        noise = torch.randn(logits.shape, generator=generator).to(logits)
        return logits + 0.04 * logits.float().pow(2).mean(-1, keepdim=True).sqrt().to(logits) * noise

    monkeypatch.setattr(StaticDecoder, "step", noisy_step)
    backend = _backend(tiny_trained_dir, "static", step_compile="eager", warm_up=MIN_LENGTH_BUCKET)
    engine = backend._static
    assert engine.failed is None and backend.decoder == "static"
    assert engine.check_error is not None and 0.02 < engine.check_error < static_decode.SELF_CHECK_TOLERANCE
    # The same noise read as the largest difference against the largest logit (the old check) exceeded 2%.
    batch = backend._padded(backend.bos_ids, [backend.encode("Q: 7 - 4 = ?\nA:")])
    expected = backend.dynamic_decoder(batch).start()
    decoder = StaticDecoder(backend, engine, batch, 16)
    decoder.start()
    got = decoder.step(torch.tensor([expected.argmax(-1).item()]))
    reference = backend.dynamic_decoder(batch)
    reference.start()
    want = reference.step(torch.tensor([expected.argmax(-1).item()]))
    assert float((got - want).abs().max()) > 0.02 * float(want.abs().max())

    monkeypatch.setattr(StaticDecoder, "_copy_prefix", lambda self, prefix: None)
    broken = _backend(tiny_trained_dir, "static", step_compile="eager", warm_up=MIN_LENGTH_BUCKET)
    assert broken.decoder == "dynamic" and "relative L2" in (broken._static.failed or "")
