"""HFBackend on a tiny random Llama loaded from disk through the real ``hf:`` path.

The model is random, so outputs are gibberish; what is checked are exact equalities between code paths
(batched + prefix cache vs one-by-one without cache, cached vs uncached forward, scoring vs a manual forward).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from robusteval.errors import UserError
from robusteval.models import GenerationRequest, ModelSpec, ScoreRequest, load_backend, parse_spec
from robusteval.models.hf import HFBackend

PREFIX = "Q: What is 2 + 3?\nA: The answer is 5. 2 + 3 = 5.\n\n"
PROMPTS = [
    "Q: 7 * 8?\nA:",
    "Q: How many eggs are left if she eats three of sixteen every morning?\nA:",
    "Q: yes or no?\nA:",
    "Q: 11 - 4 = ?\nA:",
    "Q: Is the meaning the same or different?\nA:",
]


@pytest.fixture(scope="module")
def batched(tiny_llama_dir: Path) -> HFBackend:
    """Batches of 4 (so 5 prompts make a full and a partial batch) over the cached prefix."""
    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=4, prefix_cache=True, device="cpu")
    assert isinstance(backend, HFBackend)
    return backend


@pytest.fixture(scope="module")
def single(tiny_llama_dir: Path) -> HFBackend:
    """The reference path: one request at a time, the prefix re-encoded every time."""
    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=1, prefix_cache=False, device="cpu")
    assert isinstance(backend, HFBackend)
    return backend


def _requests(max_new_tokens: int = 12, **kwargs: object) -> list[GenerationRequest]:
    return [GenerationRequest(p, max_new_tokens=max_new_tokens, prefix=PREFIX, **kwargs) for p in PROMPTS]


def _pick_stop(text: str) -> str:
    """A two-character ASCII piece from the second half of ``text`` (byte-level BPE may emit U+FFFD)."""
    for start in range(len(text) // 2, len(text) - 1):
        piece = text[start : start + 2]
        if piece.isascii() and piece.strip() == piece and piece.isprintable():
            return piece
    pytest.fail(f"no usable stop string in {text!r}")


def _full_logits(backend: HFBackend, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return backend.model(input_ids=torch.tensor([ids])).logits[0].float()


# ----------------------------------------------------------------------------------------- loading and specs


def test_loaded_backend_basics(tiny_backend: HFBackend) -> None:
    assert isinstance(tiny_backend, HFBackend)
    assert tiny_backend.name.startswith("hf:")
    assert {"generate", "logprobs", "whitebox"} <= tiny_backend.capabilities
    assert tiny_backend.embed_scale == 1.0  # Llama does not scale its embeddings
    assert tiny_backend.dtype == torch.float32  # CPU default: exact fp32
    assert tiny_backend.bos_ids == [tiny_backend.tokenizer.bos_token_id]
    assert tiny_backend.tokenizer.eos_token_id in tiny_backend.eos_ids
    assert not tiny_backend.exact_batching_only
    assert tiny_backend.generate([]) == []


def test_load_backend_missing_dir_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such model directory"):
        load_backend(f"hf:{tmp_path / 'does-not-exist'}")
    with pytest.raises(UserError, match="GGUF file not found"):
        load_backend(f"hf:{tmp_path / 'missing.gguf'}")


def test_bad_dtype_is_user_error(tiny_llama_dir: Path) -> None:
    with pytest.raises(UserError, match=r"^dtype 'float8': use one of auto"):
        load_backend(f"hf:{tiny_llama_dir}", dtype="float8")


def test_parse_spec_forms() -> None:
    assert parse_spec("hf:/models/llama") == ModelSpec("hf", "/models/llama")
    assert parse_spec("hf:org/name") == ModelSpec("hf", "org/name")
    assert parse_spec("hf:/m/model.Q4_K_M.gguf").target == "/m/model.Q4_K_M.gguf"
    spec = parse_spec("openai:gpt-4o-mini@https://api.example.com/v1/")
    assert spec == ModelSpec("openai", "gpt-4o-mini", "https://api.example.com/v1")  # trailing / dropped
    assert str(spec) == "openai:gpt-4o-mini@https://api.example.com/v1"
    # The model name may itself contain '@' and ':'; the URL is what follows the last '@'.
    spec = parse_spec("openai:/models/x@2:latest@http://127.0.0.1:8000/v1")
    assert (spec.target, spec.base_url) == ("/models/x@2:latest", "http://127.0.0.1:8000/v1")


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "hf",
        "hf:",
        "llama:/x",
        "/path/without/kind",
        "openai:gpt-4o",
        "openai:gpt-4o@",
        "openai:@http://127.0.0.1:8000/v1",
        "openai:gpt-4o@ftp://host/v1",
        "openai:gpt-4o@localhost:8000/v1",
    ],
)
def test_bad_specs_are_user_errors(spec: str) -> None:
    with pytest.raises(UserError, match="spec"):
        parse_spec(spec)
    with pytest.raises(UserError):
        load_backend(spec)


# ----------------------------------------------------------------------------------------- generation


def test_batched_prefix_cached_generation_equals_one_by_one(batched: HFBackend, single: HFBackend) -> None:
    requests = _requests(max_new_tokens=12)
    fast = batched.generate(requests)
    slow = single.generate(requests)
    assert len(fast) == len(slow) == len(requests)
    for a, b in zip(fast, slow, strict=True):
        assert (a.text, a.finish_reason, a.n_tokens) == (b.text, b.finish_reason, b.n_tokens)
    # And each batched row equals generating that request alone on the batched backend.
    alone = [batched.generate([r])[0] for r in requests]
    assert [g.text for g in alone] == [g.text for g in fast]


def test_decode_batch_token_ids_match_across_paths(batched: HFBackend, single: HFBackend) -> None:
    prefix_ids, _ = batched.prompt_ids(PREFIX, "")
    suffixes = [batched.encode(p) for p in PROMPTS]
    rows = batched.decode_batch(prefix_ids, suffixes, max_new_tokens=10)
    for suffix, row in zip(suffixes, rows, strict=True):
        (ref,) = single.decode_batch(prefix_ids, [suffix], max_new_tokens=10)
        assert row.token_ids == ref.token_ids


def test_greedy_generation_continues_the_full_sequence(batched: HFBackend) -> None:
    """The first generated token is the argmax of a plain full-sequence forward over bos+prefix+prompt."""
    prefix_ids, prompt_ids = batched.prompt_ids(PREFIX, PROMPTS[1])
    logits = _full_logits(batched, prefix_ids + prompt_ids)
    (row,) = batched.decode_batch(prefix_ids, [prompt_ids], max_new_tokens=3)
    first = int(logits[-1].argmax())
    if first in batched.eos_ids:
        assert row.token_ids == [] and row.finish_reason == "stop"
    else:
        assert row.token_ids[0] == first


def test_max_new_tokens_is_respected(batched: HFBackend) -> None:
    for max_new in (1, 3, 7):
        outs = batched.generate(_requests(max_new_tokens=max_new))
        for out in outs:
            assert out.n_tokens is not None and out.n_tokens <= max_new
            if out.finish_reason == "length":
                assert out.n_tokens == max_new


def test_stop_strings_cut_the_text(batched: HFBackend) -> None:
    (full,) = batched.generate([GenerationRequest(PROMPTS[0], max_new_tokens=16, prefix=PREFIX)])
    # A stop string taken from the free-running output; the text must end right before its first occurrence.
    stop = _pick_stop(full.text)
    expected = full.text[: full.text.find(stop)]
    (cut,) = batched.generate([GenerationRequest(PROMPTS[0], max_new_tokens=16, prefix=PREFIX, stop=(stop,))])
    assert cut.text == expected
    assert stop not in cut.text
    assert cut.finish_reason == "stop"
    assert cut.n_tokens is not None and cut.n_tokens <= full.n_tokens
    # A stop string that never occurs changes nothing; the earliest of several stops wins.
    (same,) = batched.generate(
        [GenerationRequest(PROMPTS[0], max_new_tokens=16, prefix=PREFIX, stop=("\u2603never\u2603",))]
    )
    assert (same.text, same.finish_reason) == (full.text, full.finish_reason)
    early = next(c for c in full.text[: full.text.find(stop)] if c.isascii() and c.isalnum())
    (earliest,) = batched.generate(
        [GenerationRequest(PROMPTS[0], max_new_tokens=16, prefix=PREFIX, stop=(stop, early))]
    )
    assert earliest.text == full.text[: full.text.find(early)]


def test_stop_strings_in_a_batch_apply_per_row(batched: HFBackend) -> None:
    plain = batched.generate(_requests(max_new_tokens=10))
    stops = [(g.text[2:4],) if len(g.text) >= 4 else () for g in plain]
    cut = batched.generate(
        [
            GenerationRequest(p, max_new_tokens=10, prefix=PREFIX, stop=s)
            for p, s in zip(PROMPTS, stops, strict=True)
        ]
    )
    for full, out, stop in zip(plain, cut, stops, strict=True):
        if stop:
            assert out.text == full.text[: full.text.find(stop[0])] and out.finish_reason == "stop"
        else:
            assert out.text == full.text


def test_sampling_is_seeded(batched: HFBackend) -> None:
    def sample(seed: int) -> list[str]:
        return [g.text for g in batched.generate(_requests(max_new_tokens=6, temperature=1.0, seed=seed))]

    a1, a2 = sample(1), sample(1)
    assert a1 == a2
    # A random model at temperature 1 samples from a near-uniform distribution: other seeds differ.
    assert sample(2) != a1 and sample(3) != a1
    greedy = [g.text for g in batched.generate(_requests(max_new_tokens=6))]
    assert a1 != greedy


def test_sampled_rows_do_not_depend_on_batch_neighbours(batched: HFBackend) -> None:
    requests = _requests(max_new_tokens=8, temperature=0.8, top_p=0.9, seed=5)
    together = [g.text for g in batched.generate(requests)]
    alone = [batched.generate([r])[0].text for r in requests]
    assert together == alone


# ----------------------------------------------------------------------------------------- prefix cache


def test_prefix_cache_is_reused_and_not_mutated(tiny_llama_dir: Path) -> None:
    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=2, prefix_cache=True, device="cpu")
    assert isinstance(backend, HFBackend)
    requests = _requests(max_new_tokens=6)
    first = backend.generate(requests)
    assert len(backend._prefixes) == 1
    (entry,) = backend._prefixes.values()
    keys_before = [layer.keys.clone() for layer in entry.cache.layers]
    assert entry.cache.get_seq_length() == entry.length
    second = backend.generate(requests)
    prefix_ids, prompt_ids = backend.prompt_ids(PREFIX, PROMPTS[0])
    logits_a = backend.forward(prefix_ids, backend.embed(torch.tensor([prompt_ids]))).detach()
    logits_b = backend.forward(prefix_ids, backend.embed(torch.tensor([prompt_ids]))).detach()
    backend.continuation_logprobs(PROMPTS[0], [" 5", " 56"], prefix=PREFIX)
    assert len(backend._prefixes) == 1 and next(iter(backend._prefixes.values())) is entry
    assert [(g.text, g.n_tokens) for g in first] == [(g.text, g.n_tokens) for g in second]
    assert torch.equal(logits_a, logits_b)
    # The stored cache still holds exactly the prefix, with the same values.
    assert entry.cache.get_seq_length() == entry.length == len(prefix_ids)
    for before, layer in zip(keys_before, entry.cache.layers, strict=True):
        assert torch.equal(before, layer.keys)
    # A second prefix gets its own entry.
    backend.generate([GenerationRequest(PROMPTS[0], max_new_tokens=2, prefix="Q: 1 + 1?\nA: 2\n\n")])
    assert len(backend._prefixes) == 2


# ----------------------------------------------------------------------------------------- white-box


def test_forward_with_prefix_cache_matches_no_cache_and_full_sequence(
    batched: HFBackend, single: HFBackend
) -> None:
    prefix_ids, _ = batched.prompt_ids(PREFIX, "")
    suffix = torch.tensor(
        [batched.encode(PROMPTS[0]), batched.encode(PROMPTS[3])[: len(batched.encode(PROMPTS[0]))]]
    )
    assert suffix.shape[1] >= 3
    embeds = batched.embed(suffix).detach()
    cached = batched.forward(prefix_ids, embeds).detach()
    plain = single.forward(prefix_ids, embeds).detach()
    assert cached.shape == (2, suffix.shape[1], batched.model.config.vocab_size)
    torch.testing.assert_close(cached, plain, atol=1e-4, rtol=1e-4)
    for row in range(2):
        full = _full_logits(batched, prefix_ids + suffix[row].tolist())[len(prefix_ids) :]
        torch.testing.assert_close(cached[row], full, atol=1e-4, rtol=1e-4)


def test_forward_gradients_reach_suffix_embeddings(batched: HFBackend, single: HFBackend) -> None:
    prefix_ids, prompt_ids = batched.prompt_ids(PREFIX, PROMPTS[0])
    grads = []
    for backend in (batched, single):
        embeds = backend.embed(torch.tensor([prompt_ids])).detach().clone().requires_grad_(True)
        logits = backend.forward(prefix_ids, embeds)
        loss = torch.log_softmax(logits[0, -1], dim=-1)[7]
        loss.backward()
        assert embeds.grad is not None
        assert torch.isfinite(embeds.grad).all()
        # Every suffix position influences the last logit (causal attention), so every row has gradient.
        assert (embeds.grad[0].abs().sum(dim=-1) > 0).all()
        grads.append(embeds.grad.clone())
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)
    # The cached prefix itself holds no graph: gradients went nowhere else.
    for entry in batched._prefixes.values():
        assert not any(layer.keys.requires_grad for layer in entry.cache.layers)


def test_forward_onehot_times_embedding_matrix_matches_ids(batched: HFBackend) -> None:
    """The white-box path attacks use: one-hot @ E (scaled) gives the same logits as the token ids."""
    prefix_ids, prompt_ids = batched.prompt_ids(PREFIX, PROMPTS[2])
    one_hot = torch.nn.functional.one_hot(
        torch.tensor([prompt_ids]), batched.embedding_matrix.shape[0]
    ).float()
    via_matrix = batched.forward(
        prefix_ids, one_hot @ batched.embedding_matrix * batched.embed_scale
    ).detach()
    via_ids = batched.forward(prefix_ids, batched.embed(torch.tensor([prompt_ids]))).detach()
    torch.testing.assert_close(via_matrix, via_ids, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("prefix", [PREFIX, ""])
def test_continuation_logprobs_equal_manual_forward(
    batched: HFBackend, single: HFBackend, prefix: str
) -> None:
    prompt = PROMPTS[0]
    continuations = [" The answer is 56.", " 56", " yes", "!"]
    scores = batched.continuation_logprobs(prompt, continuations, prefix=prefix)
    assert single.continuation_logprobs(prompt, continuations, prefix=prefix) == pytest.approx(
        scores, abs=1e-4
    )
    prefix_ids, prompt_ids = batched.prompt_ids(prefix, prompt)
    context = prefix_ids + prompt_ids
    for continuation, score in zip(continuations, scores, strict=True):
        cont = batched.encode(continuation)
        logp = torch.log_softmax(_full_logits(batched, context + cont), dim=-1)
        expected = sum(float(logp[len(context) - 1 + i, tok]) for i, tok in enumerate(cont))
        assert score == pytest.approx(expected, abs=1e-4)
        assert score < 0
    assert batched.continuation_logprobs(prompt, [""], prefix=prefix) == [0.0]


def test_kv_cache_passed_under_the_name_the_installed_transformers_expects(tiny_llama_dir: Path) -> None:
    """transformers 5.24 renamed ``past_key_values`` to ``cache`` and warns on the old name (removed in 5.40):
    decoding with and without the prefix cache, and the white-box forward, must not use the old name."""
    import inspect
    import logging

    from transformers.utils import logging as hf_logging

    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=2, prefix_cache=True, device="cpu")
    assert isinstance(backend, HFBackend)
    takes_cache = "cache" in inspect.signature(backend.model.forward).parameters
    assert backend._cache_kwarg == ("cache" if takes_cache else "past_key_values")

    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Collect()
    # The deprecation is logged once per process: forget earlier emissions so this test sees its own.
    cache_clear = getattr(logging.Logger.__dict__.get("warning_once"), "cache_clear", None)
    if cache_clear is not None:
        cache_clear()
    logger = hf_logging.get_logger("transformers")
    logger.addHandler(handler)
    hf_logging.get_logger("transformers.utils.generic").addHandler(handler)
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            backend.generate(_requests(max_new_tokens=4))
            prefix_ids, prompt_ids = backend.prompt_ids(PREFIX, PROMPTS[0])
            backend.forward(prefix_ids, backend.embed(torch.tensor([prompt_ids])))
    finally:
        logger.removeHandler(handler)
        hf_logging.get_logger("transformers.utils.generic").removeHandler(handler)
    assert not [m for m in seen if "deprecated" in m], seen


# ----------------------------------------------------------------------------------------- batched scoring
CHAT = [{"role": "system", "content": "Answer with one number."},
        {"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "5"},
        {"role": "user", "content": "What is 7 * 8?"}]
# Prompts of different lengths, continuations of different lengths (an empty one scores 0), two text prefixes (two
# cached prefixes, so two groups), no prefix, chat conversations with and without earlier turns (a cached chat
# prefix, and none).
SCORE_REQUESTS = [
    ScoreRequest(PROMPTS[0], (" The answer is 56.", " 56", "", "!"), PREFIX),
    ScoreRequest(PROMPTS[1], (" 13", " The answer is 13. 16 - 3 = 13."), PREFIX),
    ScoreRequest(PROMPTS[2], (" yes", " no")),
    ScoreRequest(PROMPTS[3], (" 7",), "Q: 1 + 1?\nA: 2\n\n"),
    ScoreRequest("", ("56", "5", "The answer is 56."), messages=tuple(CHAT)),
    ScoreRequest("ignored", ("1", "0"), "ignored", messages=({"role": "user", "content": "Is 7 > 5?"},)),
    ScoreRequest(PROMPTS[4], ()),
    ScoreRequest(PROMPTS[2], (" yes", " no", " maybe so")),
]


def _manual_scores(backend: HFBackend, request: ScoreRequest) -> list[float]:
    """Each continuation scored by a full forward of the whole sequence alone: no cache, no padding, no batch."""
    if request.messages:
        context = backend.encode(backend.chat_text(request.messages))
    else:
        prefix_ids, prompt_ids = backend.prompt_ids(request.prefix, request.prompt)
        context = prefix_ids + prompt_ids
    scores = []
    for continuation in request.continuations:
        cont = backend.encode(continuation)
        logp = torch.log_softmax(_full_logits(backend, context + cont), dim=-1) if cont else None
        scores.append(sum(float(logp[len(context) - 1 + i, tok]) for i, tok in enumerate(cont)) if cont else 0.0)
    return scores


def _flat(scores: list[list[float]]) -> list[float]:
    return [score for row in scores for score in row]


class Forwards(list[int]):
    """The rows of every ``backend.forward`` call (``kept``: the logits each returned)."""

    def __init__(self, backend: HFBackend, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__()
        self.kept: list[int] = []
        forward = backend.forward

        def counting(prefix_ids: Any, suffix_embeds: Any, logits_to_keep: int = 0) -> torch.Tensor:
            self.append(len(suffix_embeds))
            logits = forward(prefix_ids, suffix_embeds, logits_to_keep)
            self.kept.append(logits.numel())
            return logits

        monkeypatch.setattr(backend, "forward", counting)


@pytest.mark.parametrize(("batch_size", "prefix_cache"), [(4, True), (3, False), (64, True)])
def test_many_requests_score_as_one_at_a_time(
    tiny_llama_dir: Path, single: HFBackend, batch_size: int, prefix_cache: bool
) -> None:
    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=batch_size, prefix_cache=prefix_cache, device="cpu")
    assert isinstance(backend, HFBackend)
    many = backend.continuation_logprobs_many(SCORE_REQUESTS)
    assert [len(scores) for scores in many] == [len(r.continuations) for r in SCORE_REQUESTS]
    for request, scores in zip(SCORE_REQUESTS, many, strict=True):
        alone = single.continuation_logprobs(request.prompt, request.continuations, request.prefix,
                                             messages=request.messages)
        assert scores == pytest.approx(alone, abs=1e-4)
        assert scores == pytest.approx(_manual_scores(backend, request), abs=1e-4)
        assert [s == 0.0 for s in scores] == [not c for c in request.continuations]
    assert backend.continuation_logprobs_many([]) == []
    with pytest.raises(UserError, match="non-empty prompt"):
        backend.continuation_logprobs_many([SCORE_REQUESTS[2], ScoreRequest("", (" 1",))])


def test_many_requests_cost_one_forward_per_batch_of_rows(
    tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=4, device="cpu")
    assert isinstance(backend, HFBackend)
    requests = [ScoreRequest(p, (" 1", " 0", " 12"), PREFIX) for p in PROMPTS]  # 15 rows after one prefix
    rows = Forwards(backend, monkeypatch)
    many = backend.continuation_logprobs_many(requests)
    assert rows == [4, 4, 4, 3]  # ceil(15 / 4) forwards, not one per request
    rows.clear()
    alone = [backend.continuation_logprobs(r.prompt, r.continuations, r.prefix) for r in requests]
    assert _flat(alone) == pytest.approx(_flat(many), abs=1e-4)
    assert rows == [3] * len(PROMPTS)
    # Two prefixes are two groups (each its own cache): ceil(6 / 4) + ceil(9 / 4) forwards.
    rows.clear()
    backend.continuation_logprobs_many([*requests[:2], *(ScoreRequest(r.prompt, r.continuations) for r in requests[2:])])
    assert sorted(rows) == [1, 2, 4, 4, 4]


def test_scoring_keeps_kept_logits_within_the_budget(
    tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import robusteval.models.hf_scoring as hf_scoring

    backend = load_backend(f"hf:{tiny_llama_dir}", batch_size=64, device="cpu")
    assert isinstance(backend, HFBackend)
    requests = [ScoreRequest(p, (" 1", " The answer is 56."), PREFIX) for p in PROMPTS]
    want = backend.continuation_logprobs_many(requests)
    vocab = backend.embedding_matrix.shape[0]
    longest = len(backend.encode(" The answer is 56.")) + 1
    budget = 3 * longest * vocab  # three rows of the longest continuation, more of the shortest
    monkeypatch.setattr(hf_scoring, "logit_budget", lambda device: budget)
    rows = Forwards(backend, monkeypatch)
    assert _flat(backend.continuation_logprobs_many(requests)) == pytest.approx(_flat(want), abs=1e-4)
    assert sum(rows) == 10 and len(rows) > 1 and max(rows.kept) <= budget
    assert any(n > 3 for n in rows)  # short continuations keep fewer positions: more of them fit


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_sliding_window_models_score_many_as_one_at_a_time(tiny_backend: HFBackend, attention: str) -> None:
    """Rows of different lengths leave holes after the prefix; a sliding window must count positions, not
    columns (the per-layer masks of ``_attention``)."""
    from robusteval.models.tiny import tiny_gemma3

    tokenizer = tiny_backend.tokenizer
    model = tiny_gemma3(tokenizer, attention=attention)
    backend = HFBackend(model, tokenizer, "tiny-gemma3", batch_size=16)
    alone = HFBackend(model, tokenizer, "tiny-gemma3", batch_size=1, use_prefix_cache=False)
    requests = [r for r in SCORE_REQUESTS if not r.messages]
    for request, scores in zip(requests, backend.continuation_logprobs_many(requests), strict=True):
        assert scores == pytest.approx(alone.continuation_logprobs(request.prompt, request.continuations,
                                                                   request.prefix), abs=1e-4)
        assert scores == pytest.approx(_manual_scores(backend, request), abs=1e-4)
