"""The openai backend against real HTTP servers on 127.0.0.1: a fault-injecting fake and `transformers serve`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.runs import ENV
from helpers.servers import fake_answer, fake_openai_server, free_port
from robusteval.errors import BackendError, UserError
from robusteval.models.base import Backend, GenerationRequest
from robusteval.models.identity import describe_model
from robusteval.models.loading import load_backend
from robusteval.models.openai_api import (
    OpenAIBackend,
    build_openai_backend,
    cut_at_stop,
    parse_retry_after,
    scrub_secret,
)
from robusteval.models.registry import ModelSpec

KEY_ENV = "ROBUSTEVAL_TEST_API_KEY"
SECRET = "sk-test-SECRET-0123456789abcdef"
# Tiny backoff so retry tests take milliseconds, not the production half-second-and-up.
FAST = {"backoff_base": 0.01, "backoff_max": 0.05}


def backend_for(base_url: str, **options: object) -> OpenAIBackend:
    return build_openai_backend(ModelSpec("openai", "fake-model", base_url), **options)


def planned_waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The delays the backend chose before each retry, read from its warnings ("retry 1/3 in 0.20 s")."""
    return [float(m.group(1)) for r in caplog.records
            if (m := re.search(r"retry \d+ in ([\d.]+) s", r.getMessage()))]


@pytest.fixture(autouse=True)
def _secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every test runs with a key present, so any leak into messages would be caught; the default var is unset.
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# ----- pure helpers -----


def test_cut_at_stop_uses_earliest_stop() -> None:
    assert cut_at_stop("a b STOP c END", ["END", "STOP"]) == ("a b ", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)


def test_parse_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("-1") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = 1_000_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 7))
    assert parse_retry_after(date, now=now) == pytest.approx(7.0)


def test_spec_string_options_and_bad_endpoint() -> None:
    # Values are typed where they are read (--model-args, a study file): a string for a number is refused here.
    with pytest.raises(UserError, match=r"^load_model\(\): max_concurrency: expected a whole number, got '2' "
                       r"\(openai backend\)$"):
        load_backend("openai:m@http://127.0.0.1:9/v1/", max_concurrency="2")
    backend = load_backend("openai:m@http://127.0.0.1:9/v1/", max_concurrency=2, timeout=5, dtype="auto")
    attempts: list[str] = []
    backend._client.post = lambda url, **kwargs: attempts.append(url)  # type: ignore[method-assign]
    # Nothing listens on port 9: isinstance (which reads every protocol attribute before Python 3.12) and
    # capabilities answer without a request; only resolving them asks the server.
    assert isinstance(backend, OpenAIBackend) and isinstance(backend, Backend)
    assert backend.config.max_concurrency == 2 and backend.config.timeout == 5.0
    assert backend.name == "openai:m@http://127.0.0.1:9/v1"
    assert backend.capabilities == frozenset({"generate"})
    assert backend.generate([]) == []
    assert attempts == []
    with pytest.raises(UserError, match="endpoint"):
        load_backend("openai:m@http://127.0.0.1:9/v1", endpoint="responses")
    with pytest.raises(UserError, match=r"logprobs: 'maybe' is not one of auto, echo, prompt_logprobs, off"):
        load_backend("openai:m@http://127.0.0.1:9/v1", logprobs="maybe")


# ----- fake server: success paths -----


def test_results_in_order_under_bounded_concurrency(tmp_path: Path) -> None:
    prompts = [f"item {i} alpha beta" for i in range(12)]
    # gate=4: the server holds the first requests until 4 have arrived, so "4 in flight" does not depend on
    # timing; jitter makes later answers finish out of order.
    with (
        fake_openai_server(tmp_path, "ok", jitter=0.3, gate=4) as srv,
        backend_for(srv.base_url, max_concurrency=4) as be,
    ):
        out = be.generate([GenerationRequest(p, max_new_tokens=50) for p in prompts])
        seen = srv.requests()
    assert [g.text for g in out] == [fake_answer(p, 50, [])[0] for p in prompts]
    assert all(g.finish_reason == "stop" and g.n_tokens == 4 for g in out)
    assert max(r["inflight"] for r in seen) == 4  # parallel, but never above max_concurrency
    body = seen[0]["body"]
    assert body["model"] == "fake-model" and body["max_tokens"] == 50 and body["temperature"] == 0.0
    assert body["top_p"] == 1.0 and "stop" not in body and "seed" not in body
    assert all(r["path"] == "/v1/completions" for r in seen)


def test_stop_strings_seed_and_length(tmp_path: Path) -> None:
    stops = ("X1", "X2", "X3", "X4", "S5")  # the server only gets 4; S5 must be cut client-side
    with fake_openai_server(tmp_path, "ok") as srv, backend_for(srv.base_url, max_concurrency=1) as be:
        cut, long = be.generate(
            [
                GenerationRequest("alpha beta S5 gamma", stop=stops, seed=7),
                GenerationRequest("one two three four five six", max_new_tokens=3),
            ]
        )
        first, second = (r["body"] for r in srv.requests())
    assert first["stop"] == ["X1", "X2", "X3", "X4"] and first["seed"] == 7
    assert cut.text == "[alpha beta " and cut.finish_reason == "stop"
    assert long.text == "[one two three" and long.finish_reason == "length" and long.n_tokens == 3
    assert second["max_tokens"] == 3


def test_chat_endpoint_and_chat_requests(tmp_path: Path) -> None:
    with fake_openai_server(tmp_path, "ok") as srv:
        with backend_for(srv.base_url, endpoint="chat") as be:
            (g,) = be.generate([GenerationRequest("hello there", stop=("there",))])
        with backend_for(srv.base_url) as be:  # default completions, but the request asks for chat
            (h,) = be.generate([GenerationRequest("hi", chat=True)])
        seen = srv.requests()
    assert g.text == "[hello " and h.text == "[hi]" and g.meta["endpoint"] == "chat"
    assert [r["path"] for r in seen] == ["/v1/chat/completions"] * 2
    assert seen[0]["body"]["messages"] == [{"role": "user", "content": "hello there"}]
    assert "prompt" not in seen[0]["body"]


def test_auto_endpoint_switches_to_chat_after_404(tmp_path: Path) -> None:
    with fake_openai_server(tmp_path, "chat-only") as srv, backend_for(srv.base_url, endpoint="auto") as be:
        first = be.generate([GenerationRequest("a b")])
        second = be.generate([GenerationRequest("c d")])
        paths = [r["path"] for r in srv.requests()]
    assert first[0].text == "[a b]" and second[0].text == "[c d]"
    assert paths == ["/v1/completions", "/v1/chat/completions", "/v1/chat/completions"]


def test_completions_404_without_auto_is_an_error(tmp_path: Path) -> None:
    with (
        fake_openai_server(tmp_path, "chat-only") as srv,
        backend_for(srv.base_url) as be,
        pytest.raises(BackendError, match="HTTP 404"),
    ):
        be.generate([GenerationRequest("a b")])


# ----- fake server: retries and failures -----


def test_retry_for_is_validated_and_is_not_part_of_the_model_identity() -> None:
    spec = "openai:fake@http://127.0.0.1:9/v1"
    assert describe_model(spec, retry_for=5.0) == describe_model(spec, retry_for=600.0) == describe_model(spec)
    for bad in (-1, "soon", float("nan")):
        with pytest.raises(UserError, match=r"retry_for|bad option value"):
            load_backend(spec, retry_for=bad)


@pytest.mark.parametrize("status", [408, 409, 502])
def test_timeout_conflict_and_gateway_answers_are_retried(tmp_path: Path, status: int) -> None:
    with fake_openai_server(tmp_path, "fail-then-ok", fail_count=2, fail_status=status) as srv:
        with backend_for(srv.base_url, **FAST) as be:
            (g,) = be.generate([GenerationRequest("again")])
        assert srv.count == 3
    assert g.text == "[again]"


def test_retry_after_beyond_the_budget_fails_at_once(tmp_path: Path) -> None:
    """Waiting as the server asks would outlast retry_for: say so now instead of waiting to fail."""
    with fake_openai_server(tmp_path, "fail-then-ok", fail_count=5, fail_status=429, retry_after="20") as srv:
        began = time.monotonic()
        with (
            backend_for(srv.base_url, retry_for=5, backoff_max=60) as be,
            pytest.raises(BackendError, match=r"1 attempt in .* asks to wait 20 s \(Retry-After\), more than "
                                              r"the .* s left of retry_for=5 s\); last error: HTTP 429"),
        ):
            be.generate([GenerationRequest("later")])
        assert srv.count == 1 and time.monotonic() - began < 3


def test_429_honours_retry_after(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with fake_openai_server(tmp_path, "fail-then-ok", fail_count=1, fail_status=429, retry_after="1") as srv:
        with backend_for(srv.base_url, backoff_base=0.01, backoff_max=5) as be:
            (g,) = be.generate([GenerationRequest("after wait")])
        first, second = srv.requests()
    assert g.text == "[after wait]"
    assert planned_waits(caplog) == [1.0]  # the server's Retry-After, not the 10 ms backoff
    # The server saw the retry at least Retry-After seconds after the first request (a lower bound: not flaky).
    assert second["t"] - first["t"] >= 1.0


def test_retry_after_is_capped_by_backoff_max(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with (
        fake_openai_server(tmp_path, "fail-then-ok", fail_count=1, fail_status=503, retry_after="30") as srv,
        backend_for(srv.base_url, backoff_max=0.2) as be,
    ):
        (g,) = be.generate([GenerationRequest("capped")])
        assert srv.count == 2
    assert g.text == "[capped]"
    assert planned_waits(caplog) == [0.2]  # Retry-After 30 s, capped at backoff_max


def test_500_then_success(tmp_path: Path) -> None:
    with fake_openai_server(tmp_path, "fail-then-ok", fail_count=2, fail_status=500) as srv:
        with backend_for(srv.base_url, max_retries=3, **FAST) as be:
            (g,) = be.generate([GenerationRequest("eventually")])
        assert srv.count == 3
    assert g.text == "[eventually]" and g.finish_reason == "stop"


def test_always_500_gives_up_after_retry_budget(tmp_path: Path) -> None:
    with fake_openai_server(tmp_path, "always-500") as srv:
        with (
            backend_for(srv.base_url, max_retries=3, api_key_env=KEY_ENV, **FAST) as be,
            pytest.raises(BackendError) as info,
        ):
            be.generate([GenerationRequest("doomed"), GenerationRequest("doomed too")])
        assert srv.requests()[0]["authorization"] == f"Bearer {SECRET}"
    msg = str(info.value)
    assert "4 attempts" in msg and "HTTP 500" in msg and "internal failure" in msg
    assert f"{srv.base_url}/completions" in msg and "\n" not in msg
    assert SECRET not in msg


def test_server_down_fails_quickly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with (
        backend_for(url, max_retries=2, timeout=2, **FAST) as be,
        pytest.raises(BackendError, match=r"3 attempts.*connection error"),
    ):
        be.generate([GenerationRequest("anyone?")])
    waits = planned_waits(caplog)
    assert len(waits) == 2 and all(0.0 <= w <= 0.05 for w in waits)  # two short backoffs, no long wait


def test_slow_server_times_out_then_fails(tmp_path: Path) -> None:
    # The server answers after 5 s; a 0.3 s timeout must give up on both attempts (an answer would be a pass).
    with fake_openai_server(tmp_path, "slow", sleep=5) as srv:
        with (
            backend_for(srv.base_url, timeout=0.3, max_retries=1, **FAST) as be,
            pytest.raises(BackendError, match=r"2 attempts.*timed out after 0.3 s"),
        ):
            be.generate([GenerationRequest("zzz")])
        assert srv.count == 2


def test_401_fails_at_once_and_scrubs_the_key(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with fake_openai_server(tmp_path, "401") as srv:
        with (
            backend_for(srv.base_url, api_key_env=KEY_ENV, max_retries=5, backoff_base=1) as be,
            pytest.raises(BackendError) as info,
        ):
            be.generate([GenerationRequest("let me in")])
        assert srv.count == 1  # not retried
        assert srv.requests()[0]["authorization"] == f"Bearer {SECRET}"
    assert planned_waits(caplog) == []  # no retry was even planned
    msg = str(info.value)
    assert "HTTP 401" in msg and "Incorrect API key provided: ***" in msg
    assert SECRET not in msg and SECRET not in repr(info.value)


def test_api_key_from_named_env_var_never_exposed(tmp_path: Path) -> None:
    with fake_openai_server(tmp_path, "ok") as srv:
        with backend_for(srv.base_url, api_key_env=KEY_ENV) as keyed:
            keyed.generate([GenerationRequest("x")])
            assert SECRET not in repr(keyed) and SECRET not in keyed.name and SECRET not in str(keyed)
            assert KEY_ENV in repr(keyed)
        with backend_for(srv.base_url) as anonymous:  # OPENAI_API_KEY unset: no Authorization header
            anonymous.generate([GenerationRequest("y")])
        auths = [r["authorization"] for r in srv.requests()]
    assert auths == [f"Bearer {SECRET}", None]


# ----- partial echoes of a key -----

PLANTED = "sk-PLANTc0ffeeD15ea5e5ecret77e1l3a9c"


def echoes(key: str) -> dict[str, str]:
    """The ways servers quote a key back, built from ``key`` (first/last characters around mask characters)."""
    return {
        "openai": f"Incorrect API key provided: {key[:8]}{'*' * 20}{key[-4:]}. You can find your API key at ...",
        "dots": f"invalid key {key[:4]}...{key[-4:]} (check it)",
        "stars-last4": f"key ****{key[-4:]} is revoked",
        "bullets": f"key ••••{key[-4:]} expired",
        "ellipsis": f"key {key[:5]}…{key[-5:]}",
        "xs": f"token {key[:6]}xxxxxxxx{key[-4:]}",
        "whole": f"Incorrect API key provided: {key}.",
        "middle": f"bad token fragment {key[10:20]}",
        "json": json.dumps({"error": {"message": f"Incorrect API key provided: {key[:8]}****{key[-4:]}",
                                      "key": key, "code": "invalid_api_key"}}),
    }


def leaked(text: str, key: str) -> list[str]:
    """Every fragment of ``key`` a reader of ``text`` could use: the key, any 6 characters of it, or 4 first/last
    characters next to a mask."""
    found = [key[i : i + 6] for i in range(len(key) - 5) if key[i : i + 6] in text]
    for n in range(4, len(key) + 1):
        found += [key[:n] + mask for mask in "*x•…." if key[:n] + mask in text]
        found += [mask + key[-n:] for mask in "*x•…." if mask + key[-n:] in text]
    return found


@pytest.mark.parametrize("style", sorted(echoes(PLANTED)))
def test_scrub_removes_every_echo_style(style: str) -> None:
    message = echoes(PLANTED)[style]
    assert leaked(message, PLANTED)  # the echo does give part of the key away
    scrubbed = scrub_secret(message, PLANTED)
    assert leaked(scrubbed, PLANTED) == [] and "***" in scrubbed


def test_scrub_keeps_the_rest_of_the_message() -> None:
    key = PLANTED
    assert scrub_secret(f"Incorrect API key provided: {key[:8]}****{key[-4:]}. See docs.", key) == \
        "Incorrect API key provided: *** See docs."
    body = json.dumps({"error": {"message": f"bad key {key}", "code": 401}})
    assert json.loads(scrub_secret(body, key)) == {"error": {"message": "bad key ***", "code": 401}}
    # Nothing of the key: unchanged, URLs and numbers included; a short key fragment alone is no leak.
    plain = "openai:m@http://127.0.0.1:8000/v1: POST /v1/completions failed with HTTP 401 (3a9c) xxxx ****"
    assert scrub_secret(plain, key) == plain
    assert scrub_secret(plain, None) == plain and scrub_secret(plain, "") == plain


def test_partial_key_echo_is_scrubbed_from_the_error(tmp_path: Path) -> None:
    with (
        fake_openai_server(tmp_path, "ok-then-401", ok_count=0) as srv,
        backend_for(srv.base_url, api_key_env=KEY_ENV) as be,
        pytest.raises(BackendError) as info,
    ):
        be.generate([GenerationRequest("x")])
    message = str(info.value)
    assert "HTTP 401" in message and "Incorrect API key provided: ***" in message
    assert leaked(message, SECRET) == []


def test_cli_run_with_a_planted_key_leaks_it_nowhere(tmp_path: Path) -> None:
    """A real `robusteval eval` in a subprocess, with a planted key: the server answers (a) the first run, then
    (b) rejects the key, quoting it partially as the OpenAI API does. Neither the key nor any fragment of it may
    reach stdout, stderr, the summary, the SQLite bytes or any other file of the run directory (or a crash log)."""
    env_name = "ROBUSTEVAL_PLANTED_KEY"
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n"
                            for i in range(5)), encoding="utf-8")
    out = tmp_path / "run"
    cache = tmp_path / "cache"
    env = {**ENV, env_name: PLANTED, "ROBUSTEVAL_CACHE": str(cache)}
    with fake_openai_server(tmp_path, "ok-then-401", ok_count=3) as srv:

        def run(limit: int) -> subprocess.CompletedProcess[str]:
            args = ["eval", "--model", f"openai:planted-model@{srv.base_url}", "--api-key-env", env_name,
                    "--dataset", "jsonl", "--data-file", str(data), "--limit", str(limit), "--batch-size", "1",
                    "--max-concurrency", "1", "--max-new-tokens", "8", "--out", str(out)]
            return subprocess.run([sys.executable, "-m", "robusteval.cli.main", *args], capture_output=True,
                                  text=True, env=env, timeout=120)

        ok = run(3)  # (a) three answers
        failed = run(5)  # (b) the same run directory, two more questions: the server now refuses the key
        seen = srv.requests()
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert [r["authorization"] for r in seen] == [f"Bearer {PLANTED}"] * 4  # the key was really sent
    assert failed.returncode != 0 and "HTTP 401" in failed.stderr
    assert "Incorrect API key provided: ***" in failed.stderr  # the echo reached the user, scrubbed
    files = sorted(p for root in (out, cache) if root.exists() for p in root.rglob("*") if p.is_file())
    assert out / "summary.json" in files and out / "results.sqlite" in files
    texts = {"stdout (a)": ok.stdout, "stderr (a)": ok.stderr, "stdout (b)": failed.stdout,
             "stderr (b)": failed.stderr}
    texts.update({str(p): p.read_bytes().decode("utf-8", "replace") for p in files})
    assert {where: leaked(text, PLANTED) for where, text in texts.items() if leaked(text, PLANTED)} == {}
    # And the raw bytes, whatever their encoding (SQLite pages, WAL): not the key, nor its first 8 characters.
    for p in files:
        raw = p.read_bytes()
        assert PLANTED.encode() not in raw and PLANTED[:8].encode() not in raw, p


# ----- transformers serve (real model server) -----


def _stop_case(full: str) -> tuple[str, str]:
    """A stop word from the middle of ``full`` and the text the backend must return for it."""
    words = full.split()
    stop = words[len(words) // 2]
    return stop, full[: full.find(stop)]


@pytest.mark.slow
def test_transformers_serve_completions(tiny_served_model: tuple[str, str]) -> None:
    base_url, model = tiny_served_model
    with load_backend(f"openai:{model}@{base_url}", max_retries=1) as be:
        (full,) = be.generate([GenerationRequest("the cat sat on", max_new_tokens=10)])
        assert full.finish_reason == "length" and len(full.text.split()) == 10
        stop, expected = _stop_case(full.text)
        # Three requests in flight at once: the same greedy request must give the same text.
        again, cut, chat = be.generate(
            [
                GenerationRequest("the cat sat on", max_new_tokens=10),
                GenerationRequest("the cat sat on", max_new_tokens=10, stop=(stop,)),
                GenerationRequest("the cat sat on", max_new_tokens=6, chat=True),
            ]
        )
    assert again.text == full.text
    # transformers serve returns the stop string itself; the backend must cut it off.
    assert cut.text == expected and stop not in cut.text and cut.finish_reason == "stop"
    assert chat.text.strip() and chat.meta["endpoint"] == "chat"


@pytest.mark.slow
def test_transformers_serve_chat_endpoint(tiny_served_model: tuple[str, str]) -> None:
    base_url, model = tiny_served_model
    with load_backend(f"openai:{model}@{base_url}", endpoint="chat", max_retries=1) as be:
        (full,) = be.generate([GenerationRequest("what is two plus two ?", max_new_tokens=8)])
        assert full.text.strip() and full.finish_reason == "length"
        stop, expected = _stop_case(full.text)
        (cut,) = be.generate([GenerationRequest("what is two plus two ?", max_new_tokens=8, stop=(stop,))])
    assert cut.text == expected and cut.finish_reason == "stop"


@pytest.mark.slow
def test_transformers_serve_unknown_model_is_a_clear_error(tiny_served_model: tuple[str, str]) -> None:
    base_url, _ = tiny_served_model
    with (
        load_backend(f"openai:not-this-model@{base_url}") as be,
        pytest.raises(BackendError, match=r"HTTP 400.*pinned"),
    ):
        be.generate([GenerationRequest("x")])
