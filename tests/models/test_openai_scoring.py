"""Prompt log-probs over OpenAI-compatible HTTP: the response formats, the capability probe, and scores equal to
the hf backend's on the same tiny model, served for real (``helpers.scoring_server``) in vLLM's two formats.

No vLLM runs here (it needs its own CUDA build of torch); the servers below answer in the formats vLLM documents
and implements, with log-probs computed by the real tiny model, and ``transformers serve`` stands in for a real
server that offers neither format.
"""

from __future__ import annotations

import json
import math
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.scoring_server import TinyLM, scoring_server
from helpers.servers import fake_openai_server, free_port
from robusteval.errors import BackendError, UserError
from robusteval.judges import ReasoningItem, ReasoningJudge
from robusteval.models import LOGPROBS, WHITEBOX, load_backend, require
from robusteval.models.base import Backend, ScoreRequest, can_score, resolve_capabilities
from robusteval.models.openai_api import OpenAIBackend
from robusteval.models.openai_scoring import (
    PROBE_CONTEXT,
    PROMPTS_PER_REQUEST,
    ScoringFormatError,
    completion_tokens,
    continuation_logprob,
    echo_tokens,
    prompt_logprob_tokens,
)

SCORING_MODES = ("echo", "prompt_logprobs")
# (prefix, prompt, continuations): label words, multi-token continuations, an empty one, a cached prefix.
CASES = [
    ("", "Q: 3 + 4 =", [" 7", " 12", "", " seven eight nine"]),
    ("Q: What is 2 + 2?\nA: The answer is 4.\n", "Q: 3 + 4 =\nA: The answer is", [" 7", " 7. Because 3 + 4 = 7."]),
    ("", "Is the sky blue? Answer:", [" yes", " no", " correct", " incorrect"]),
]


@pytest.fixture(scope="module")
def tiny_lm(tiny_llama_dir: Path) -> TinyLM:
    return TinyLM(tiny_llama_dir)


@pytest.fixture
def served(request: pytest.FixtureRequest, tiny_lm: TinyLM) -> Iterator[Any]:
    with scoring_server(tiny_lm, request.param) as server:
        yield server


def api(server: Any, **options: Any) -> OpenAIBackend:
    backend = load_backend(server.spec(), max_retries=0, **options)
    assert isinstance(backend, OpenAIBackend)
    return backend


def first_prompts(server: Any) -> list[str]:
    """The first prompt of every /completions request the server saw (the context, for scoring requests)."""
    return [r["body"]["prompt"][0] for r in server.requests if r["path"] == "/v1/completions"]


def test_the_test_servers_generation_uses_this_transformers_cache_argument(tiny_lm: TinyLM) -> None:
    # transformers 5.24 renamed past_key_values (a FutureWarning now, gone in 5.40): the server must not use the old
    # name where the model takes the new one.
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*past_key_values")
        assert len(tiny_lm.generate(tiny_lm.text_ids("Q: 3 + 4 ="), 3)) >= 1


# ------------------------------------------------------------------------------------ documented formats
# vLLM serving meta-llama/Llama-3.1-8B, /v1/completions with "prompt": "The capital of France is",
# "max_tokens": 1, "prompt_logprobs": 5; the answer's choices[0].prompt_logprobs[:2] as shown in
# https://infra.acsresearch.org/tutorial/examples/prompt-logprobs (position 0 is BOS; the prompt's own token "The",
# id 791, is 4th by rank among the top 5).
DOC_PROMPT_LOGPROBS = json.loads("""[
  null,
  {
    "14924": {"logprob": -1.179518699645996, "rank": 1, "decoded_token": "Question"},
    "755":   {"logprob": -2.179518699645996, "rank": 2, "decoded_token": "def"},
    "2":     {"logprob": -2.742018699645996, "rank": 3, "decoded_token": "#"},
    "791":   {"logprob": -3.679518699645996, "rank": 4, "decoded_token": "The"},
    "16309": {"logprob": -4.179518699645996, "rank": 5, "decoded_token": "Tags"}
  }
]""")
# The same server's OpenAI-format logprobs ("logprobs": 5, no echo), from
# https://infra.acsresearch.org/tutorial/examples/logprobs.
DOC_COMPLETION = json.loads("""{
  "id": "cmpl-91ea94c6ed0e5b75",
  "object": "text_completion",
  "model": "meta-llama/Llama-3.1-8B",
  "choices": [
    {
      "index": 0,
      "text": " a",
      "logprobs": {
        "text_offset": [0],
        "tokens": [" a"],
        "token_logprobs": [-1.7437232732772827],
        "top_logprobs": [
          {
            " a": -1.7437232732772827,
            " Paris": -1.9937232732772827,
            " one": -2.5562233924865723,
            " the": -2.5562233924865723,
            " also": -3.1187233924865723
          }
        ]
      },
      "finish_reason": "length"
    }
  ],
  "usage": {"prompt_tokens": 6, "completion_tokens": 1, "total_tokens": 7}
}""")


def test_documented_vllm_prompt_logprobs_need_the_prompt_token_to_be_known() -> None:
    # Top-5 entries without prompt_token_ids: the prompt's token could be any of them, so it is refused...
    with pytest.raises(ScoringFormatError, match="prompt_token_ids"):
        prompt_logprob_tokens(DOC_PROMPT_LOGPROBS)
    # ...and with the ids (vLLM's return_token_ids; 128000 is Llama 3's BOS) the right entry is read, not the first.
    assert prompt_logprob_tokens(DOC_PROMPT_LOGPROBS, [128000, 791]) == [(128000, None), (791, -3.679518699645996)]
    # What prompt_logprobs: 0 returns: the prompt's token alone.
    assert prompt_logprob_tokens([None, {"791": DOC_PROMPT_LOGPROBS[1]["791"]}]) == [(None, None),
                                                                                  ("791", -3.679518699645996)]


def test_documented_openai_logprobs_parse_but_are_no_echo() -> None:
    assert echo_tokens(DOC_COMPLETION["choices"][0]["logprobs"]) == [(" a", -1.7437232732772827)]
    # Generated text, not the prompt echoed: scoring it would score the wrong tokens.
    with pytest.raises(ScoringFormatError, match="not the prompt echoed"):
        completion_tokens(DOC_COMPLETION, "echo", ["The capital of France is"])


def vllm_echo_choice(prompt: str, tokens: list[str], logprobs: list[float | None]) -> dict[str, Any]:
    """A choice as vLLM's ``_create_completion_logprobs`` writes it: text_offset is the running length of the token
    strings, so a BOS string shifts every offset past the prompt's characters."""
    offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
    top = [None if lp is None else {t: lp} for t, lp in zip(tokens, logprobs, strict=True)]
    return {"index": 0, "text": prompt, "finish_reason": "length",
            "logprobs": {"tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets, "top_logprobs": top}}


def test_a_straddling_token_is_found_by_tokens_not_by_offsets() -> None:
    bos = "<|begin_of_text|>"
    context = vllm_echo_choice("Answer: ", [bos, "Answer", ":", " "], [None, -9.0, -1.0, -2.0])
    full = vllm_echo_choice("Answer: yes", [bos, "Answer", ":", " yes"], [None, -9.0, -1.0, -0.5])
    full["index"] = 1
    # Offsets count the BOS string: the continuation "yes" starts at character 8 of the text, offset 8 is "Answer".
    assert full["logprobs"]["text_offset"][1] == len(bos)
    context_tokens, full_tokens = completion_tokens({"choices": [full, context]}, "echo", ["Answer: ", "Answer: yes"])
    # " yes" straddles the boundary: scored whole, re-cutting the context's last token " ".
    assert continuation_logprob(context_tokens, full_tokens) == (-0.5, 1)
    # Without a merge the continuation is exactly its own tokens.
    assert continuation_logprob([("a", None), ("b", -1.0)], [("a", None), ("b", -1.0), ("c", -2.0), ("d", -3.0)]) \
        == (-5.0, 0)
    with pytest.raises(ScoringFormatError, match="first token"):
        continuation_logprob([("ab", None)], [("abc", None)])


@pytest.mark.parametrize(("body", "message"), [
    ({"choices": [{"index": 0, "text": "x"}]}, "expected 2 choices"),
    ({"error": "nope"}, "expected 2 choices"),
    ({"choices": [{"text": "a", "logprobs": None}, {"text": "ab", "logprobs": None}]}, "no 'logprobs'"),
    ({"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": []}},
                  {"text": "ab", "logprobs": {"tokens": ["a"], "token_logprobs": [None]}}]}, "1 tokens but 0"),
    ({"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": ["-1"]}},
                  {"text": "ab", "logprobs": {"tokens": ["a"], "token_logprobs": [None]}}]}, "not a number"),
])
def test_unusable_echo_answers_say_what_is_missing(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ScoringFormatError, match=message):
        completion_tokens(body, "echo", ["a", "ab"])


def test_unusable_prompt_logprobs_say_what_is_missing() -> None:
    with pytest.raises(ScoringFormatError, match="ignored prompt_logprobs"):
        completion_tokens({"choices": [{"text": "x"}]}, "prompt_logprobs", ["a"])
    with pytest.raises(ScoringFormatError, match=r"prompt_logprobs\[1\]"):
        prompt_logprob_tokens([None, []])


# ------------------------------------------------------------------------------------ real HTTP, real model
@pytest.mark.parametrize("served", SCORING_MODES, indirect=True)
def test_scores_equal_the_hf_backend(served: Any, tiny_backend: Any) -> None:
    backend = api(served)
    # capabilities never asks the server: before the probe it says what is known, generate
    assert backend.capabilities == frozenset({"generate"}) and served.requests == []
    assert LOGPROBS in resolve_capabilities(backend) and backend.scoring.method == served.mode
    assert LOGPROBS in backend.capabilities  # known from now on
    require(backend, LOGPROBS, "a test")
    for prefix, prompt, continuations in CASES:
        got = backend.continuation_logprobs(prompt, continuations, prefix=prefix)
        want = tiny_backend.continuation_logprobs(prompt, continuations, prefix=prefix)
        assert got == pytest.approx(want, abs=1e-4)
        assert [score for score, text in zip(got, continuations, strict=True) if not text] in ([], [0.0])
    # One probe for the backend's life; then one request per call, the context first, the texts after it.
    probes = first_prompts(served).count(PROBE_CONTEXT)
    assert probes == (1 if served.mode == "echo" else 2)  # echo is tried first
    scoring = [r["body"]["prompt"] for r in served.requests if r["body"]["prompt"][0] != PROBE_CONTEXT]
    assert len(scoring) == len(CASES)
    for (prefix, prompt, continuations), prompts in zip(CASES, scoring, strict=True):
        assert prompts == [prefix + prompt, *(prefix + prompt + c for c in continuations if c)]


@pytest.mark.parametrize("served", ["echo"], indirect=True)
def test_many_continuations_go_in_requests_of_32(served: Any, tiny_backend: Any) -> None:
    backend = api(served, max_concurrency=3)
    continuations = [f" {n}" for n in range(70)]
    got = backend.continuation_logprobs("Q: 3 + 4 =", continuations)
    assert got == pytest.approx(tiny_backend.continuation_logprobs("Q: 3 + 4 =", continuations), abs=1e-4)
    sizes = sorted(len(r["body"]["prompt"]) for r in served.requests if r["body"]["prompt"][0] == "Q: 3 + 4 =")
    assert sizes == [70 - 2 * PROMPTS_PER_REQUEST + 1, PROMPTS_PER_REQUEST + 1, PROMPTS_PER_REQUEST + 1]


@pytest.mark.parametrize("served", SCORING_MODES, indirect=True)
def test_a_token_straddling_the_boundary_is_scored_whole(served: Any, tiny_backend: Any) -> None:
    backend = api(served)
    # This tokenizer writes "Answer: yes" as ... ":" " yes", but "Answer: " alone ends in " ": the continuation's
    # score is " yes" after "Answer:", which is what the hf backend gives with the boundary at the straddling token.
    [straddled] = backend.continuation_logprobs("Answer: ", ["yes"])
    assert straddled == pytest.approx(tiny_backend.continuation_logprobs("Answer:", [" yes"])[0], abs=1e-4)
    assert not math.isclose(straddled, tiny_backend.continuation_logprobs("Answer: ", ["yes"])[0], abs_tol=1e-3)
    # Inside a word: "...is fo" + "ur" is tokenised " f" "our", so "our" is scored after " f".
    [inside] = backend.continuation_logprobs("The answer is fo", ["ur"])
    assert inside == pytest.approx(tiny_backend.continuation_logprobs("The answer is f", ["our"])[0], abs=1e-4)
    assert backend._scorer.recut_tokens == 2


@pytest.mark.parametrize("served", ["prompt_logprobs"], indirect=True)
def test_chat_conversations_are_scored_through_prompt_logprobs(served: Any, tiny_backend: Any) -> None:
    backend = api(served)
    messages = [{"role": "system", "content": "Answer yes or no."}, {"role": "user", "content": "Is 3 + 4 = 7?"}]
    got = backend.continuation_logprobs("", ["yes", "no", "", "yes, it is"], messages=messages)
    want = tiny_backend.continuation_logprobs("", ["yes", "no", "", "yes, it is"], messages=messages)
    assert got == pytest.approx(want, abs=1e-4)
    # After the chat probe's two: the context (the conversation up to the reply) and one request per reply,
    # sent concurrently (in any order).
    chats = [r["body"] for r in served.requests if r["path"] == "/v1/chat/completions"][2:]
    contexts = [c for c in chats if c["add_generation_prompt"]]
    assert len(chats) == 4 and [c["messages"] for c in contexts] == [messages]
    replies = [c for c in chats if not c["add_generation_prompt"]]
    assert all(c["continue_final_message"] and c["messages"][:-1] == messages for c in replies)
    assert sorted(c["messages"][-1]["content"] for c in replies) == ["no", "yes", "yes, it is"]


@pytest.mark.parametrize("served", ["prompt_logprobs"], indirect=True)
def test_many_requests_share_one_bounded_pool_and_score_as_one_at_a_time(served: Any, tiny_backend: Any) -> None:
    backend = api(served, max_concurrency=3)
    messages = ({"role": "system", "content": "Answer yes or no."}, {"role": "user", "content": "Is 3 + 4 = 7?"})
    requests = [ScoreRequest(prompt, tuple(continuations), prefix) for prefix, prompt, continuations in CASES]
    requests.insert(1, ScoreRequest("", ("yes", "", "no, it is not"), messages=messages))
    backend.resolve_capabilities()
    backend.continuation_logprobs("", ["yes"], messages=messages)  # the chat probe, before counting
    pools: list[int] = []
    in_flight, most = [0], [0]
    lock = threading.Lock()
    run_all, post = backend._scorer._run_all, backend._scorer._post

    def counting_run_all(work: Any, items: Any) -> Any:
        pools.append(len(items))
        return run_all(work, items)

    def tracking_post(url: str, payload: Any, abort: Any) -> Any:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(0.05)  # long enough for the pool's other workers to start theirs
            return post(url, payload, abort)
        finally:
            with lock:
                in_flight[0] -= 1

    backend._scorer._run_all, backend._scorer._post = counting_run_all, tracking_post
    got = backend.continuation_logprobs_many(requests)
    # Text requests: one /completions request each (context + texts); the chat: the context and one per reply.
    assert pools == [len(CASES) + 1 + 2]
    assert 1 < most[0] <= 3
    for request, scores in zip(requests, got, strict=True):
        want = tiny_backend.continuation_logprobs(request.prompt, request.continuations, request.prefix,
                                                  messages=request.messages)
        assert scores == pytest.approx(want, abs=1e-4)
    assert backend.continuation_logprobs_many([]) == []


@pytest.mark.parametrize("served", ["echo"], indirect=True)
def test_a_server_that_scores_text_but_not_chats_says_so(served: Any) -> None:
    backend = api(served)
    assert can_score(backend) and LOGPROBS in backend.capabilities
    with pytest.raises(UserError, match="cannot score a chat conversation"):
        backend.continuation_logprobs("", ["yes"], messages=[{"role": "user", "content": "Hi"}])


@pytest.mark.parametrize("served", ["plain"], indirect=True)
def test_a_server_that_ignores_echo_is_detected(served: Any) -> None:
    backend = api(served)
    assert resolve_capabilities(backend) == frozenset({"generate"}) and backend.scoring.method is None
    assert "echo:" in backend.scoring.detail and "prompt_logprobs:" in backend.scoring.detail
    seen = len(served.requests)
    assert seen == 2  # one try per format
    assert backend.capabilities == frozenset({"generate"}) and len(served.requests) == seen  # remembered
    assert not can_score(backend) and len(served.requests) == seen
    with pytest.raises(UserError, match="cannot score continuations"):
        backend.continuation_logprobs("Q:", [" 1"])
    with pytest.raises(UserError, match=r"offers only: generate \(server: echo: "):
        require(backend, LOGPROBS, "soft labels")
    with pytest.raises(UserError, match="whitebox"):
        require(backend, WHITEBOX, "MATCHA")
    assert len(served.requests) == seen


@pytest.mark.parametrize("served", ["echo"], indirect=True)
def test_off_and_the_chat_endpoint_never_probe(served: Any) -> None:
    for options in ({"logprobs": "off"}, {"endpoint": "chat"}):
        backend = api(served, **options)
        assert backend.capabilities == frozenset({"generate"}) and backend.scoring.method is None
        assert not can_score(backend)
    assert served.requests == []


@pytest.mark.parametrize("served", ["echo"], indirect=True)
def test_a_forced_format_the_server_lacks_is_one_clear_error(served: Any) -> None:
    backend = api(served, logprobs="prompt_logprobs")
    assert backend.capabilities == frozenset({"generate"})  # not asked yet
    with pytest.raises(UserError, match="logprobs=prompt_logprobs was asked for and cannot be had") as caught:
        backend.resolve_capabilities()
    assert "\n" not in str(caught.value)
    assert api(served, logprobs="echo").scoring.method == "echo"


def test_transformers_serve_offers_no_prompt_logprobs(tiny_served_model: tuple[str, str]) -> None:
    base_url, model = tiny_served_model
    backend = load_backend(f"openai:{model}@{base_url}", max_retries=0)
    assert resolve_capabilities(backend) == frozenset({"generate"})
    # It refuses a list prompt (400) and the unknown prompt_logprobs field (422): both are answers, not outages.
    assert "HTTP 400" in backend.scoring.detail and "HTTP 422" in backend.scoring.detail


def counted_posts(backend: OpenAIBackend) -> list[str]:
    """The URLs of every HTTP attempt ``backend`` makes from now on (retries included)."""
    attempts: list[str] = []
    post = backend._client.post

    def counting(url: str, **kwargs: Any) -> Any:
        attempts.append(url)
        return post(url, **kwargs)

    backend._client.post = counting  # type: ignore[method-assign]
    return attempts


def test_an_outage_or_a_bad_key_fails_instead_of_switching_scoring_off(tmp_path: Path) -> None:
    dead = load_backend(f"openai:m@http://127.0.0.1:{free_port()}/v1", max_retries=0)
    attempts = counted_posts(dead)
    assert isinstance(dead, Backend) and dead.capabilities == frozenset({"generate"}) and attempts == []  # no I/O
    with pytest.raises(BackendError, match="connection error"):
        can_score(dead)
    # It fails at once: one attempt (max_retries=0), and the outage is not taken as the answer of the first format
    # (which would go on to try the next).
    assert attempts == [f"{dead.base_url}/completions"]
    with fake_openai_server(tmp_path, "401") as server:
        refused = load_backend(f"openai:m@{server.base_url}", max_retries=0)
        with pytest.raises(BackendError, match="HTTP 401") as caught:
            refused.resolve_capabilities()
        assert caught.value.status == 401


# ------------------------------------------------------------------------------------ a log-prob judge
JUDGED = [
    ReasoningItem("Janet has 16 eggs. She eats 3. How many are left?", "The answer is 13. 16 - 3 = 13.",
                  "The answer is 13. 16 - 3 = 12."),
    ReasoningItem("Can birds fly?", "The answer is yes. Most birds can fly.", "The answer is yes. Fish swim."),
]


@pytest.mark.parametrize("served", SCORING_MODES, indirect=True)
def test_a_log_prob_judge_over_the_api_matches_the_hf_judge(served: Any, tiny_backend: Any) -> None:
    over_api, local = ReasoningJudge(api(served)), ReasoningJudge(tiny_backend)
    assert over_api.identity["method"] == "logprobs"
    for mine, theirs in zip(over_api.judge(JUDGED), local.judge(JUDGED), strict=True):
        assert mine.detail["method"] == "logprobs"
        assert mine.detail["logprob_1"] == pytest.approx(theirs.detail["logprob_1"], abs=1e-4)
        assert mine.detail["logprob_0"] == pytest.approx(theirs.detail["logprob_0"], abs=1e-4)
        assert mine.label == theirs.label
    if served.mode == "prompt_logprobs":  # --judge-chat: "1"/"0" as the start of the assistant's reply
        chat_api, chat_local = ReasoningJudge(api(served), chat=True), ReasoningJudge(tiny_backend, chat=True)
        for mine, theirs in zip(chat_api.judge(JUDGED), chat_local.judge(JUDGED), strict=True):
            assert mine.detail["logprob_1"] == pytest.approx(theirs.detail["logprob_1"], abs=1e-4)


@pytest.mark.parametrize("served", ["plain"], indirect=True)
def test_a_judge_on_a_server_without_logprobs_generates_its_verdict(served: Any) -> None:
    judge = ReasoningJudge(api(served))
    assert judge.identity["method"] == "generate"
    verdicts = judge.judge(JUDGED)
    assert [v.detail["method"] for v in verdicts] == ["generate", "generate"]
    assert [r["path"] for r in served.requests[2:]] == ["/v1/chat/completions"] * 2  # after the two probe requests
