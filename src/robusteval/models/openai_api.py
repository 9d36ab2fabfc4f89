"""OpenAI-compatible HTTP backend: ``openai:MODEL@http://host:port/v1``.

Works with the OpenAI API and with local OpenAI-compatible servers (``transformers serve``, vLLM,
llama.cpp, Ollama…). ``generate`` always; ``logprobs`` (teacher-forced scoring of continuations, as the hf
backend offers) when the server returns prompt log-probs: ``echo`` + ``logprobs`` on ``/completions`` or vLLM's
``prompt_logprobs``. Servers differ (``transformers serve`` offers neither), so the first caller that needs to
know (:meth:`OpenAIBackend.resolve_capabilities`, through :func:`~robusteval.models.base.can_score` or
``require(backend, LOGPROBS, ...)``) triggers a probe, a real scoring request, and its answer holds for this
backend's life (:mod:`robusteval.models.openai_scoring`; ``logprobs=off`` skips it). ``capabilities`` never asks:
it says ``generate``, plus ``logprobs`` once the probe found it.

Design notes:

* Requests run on a small thread pool over one shared, pooled :class:`httpx.Client`; this works from
  any synchronous caller, even one that already runs an asyncio loop (a notebook).
* Transient failures (408, 409, 429, 5xx but 501/505, timeouts, connection errors) are retried on a time
  budget per request (``retry_for``, 120 s) with one exponential backoff shared by the requests in flight
  (:mod:`robusteval.models.retry`: an outage is waited out together, one probe per round, and a success
  re-opens the gate for all); ``Retry-After`` sets the wait when the server sends it. A batch fails when a
  request's budget is spent. Everything else fails at once with the server's own message, since retrying a
  bad request only wastes quota; so does the rest of a batch after a failure, or Ctrl-C.
* ``endpoint`` is ``"completions"`` (default, raw prompt to ``/completions``), ``"chat"`` (prompt as one
  user message to ``/chat/completions``) or ``"auto"``: try ``/completions`` and, on a 404, switch to
  chat for the rest of this backend's life (for chat-only servers). ``GenerationRequest.chat=True``
  always uses chat; a request with ``messages`` (a conversation: system prompt, exemplar turns, question) is
  sent to ``/chat/completions`` as given, whatever the endpoint.
* Stop strings are cut client-side as well: some servers return the stop string, some ignore ``stop``,
  and the OpenAI API accepts at most 4.
* ``transformers serve`` (5.x) offers both ``/v1/completions`` and ``/v1/chat/completions``; the request's
  ``model`` is a hub id or local path (a server started with a FORCE_MODEL answers 400 to any other
  name), chat needs a tokenizer with a chat template, it answers 422 to unknown request fields, keeps
  the stop string in the returned text, and treats ``seed`` as a global torch seed.
* The API key is read from an environment variable (never passed as a value, so it never reaches a
  config file or a stored record) and is scrubbed, with any partial echo of it ("sk-ab****wxyz"), from every
  error message (:func:`scrub_secret`); ``repr`` and ``name`` omit it.
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import httpx

from robusteval.errors import BackendError
from robusteval.models.base import (
    GENERATE,
    LOGPROBS,
    Capabilities,
    Generation,
    GenerationRequest,
    Message,
    ScoreRequest,
    freeze_messages,
)
from robusteval.models.openai_options import OpenAIOptions
from robusteval.models.openai_scoring import PromptScorer, ScoringSupport
from robusteval.models.registry import ModelSpec, register_backend, resolve_options
from robusteval.models.retry import Aborted, SharedBackoff
from robusteval.progress import waiting

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Worth retrying: a timeout, a conflict or a rate limit, or a server error (but "not implemented" and "HTTP
#: version not supported", which will not change). Every other 4xx fails at once: retrying wastes quota.
RETRYABLE_STATUS = frozenset({408, 409, 429} | set(range(500, 600)) - {501, 505})
MAX_API_STOP = 4  # the OpenAI API rejects more than 4 stop sequences
_MESSAGE_LIMIT = 300
_GENERATE_ONLY = frozenset({GENERATE})
_SCORING = frozenset({GENERATE, LOGPROBS})
T = TypeVar("T")
R = TypeVar("R")


#: The backend's options (the fields of :class:`~robusteval.models.openai_options.OpenAIOptions`); the old name.
OpenAIConfig = OpenAIOptions


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the earliest occurrence of any stop string; return (text, whether it was cut)."""
    positions = [i for s in stops if s and (i := text.find(s)) >= 0]
    if not positions:
        return text, False
    return text[: min(positions)], True


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date); None if absent/invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# Characters servers use to mask the hidden part of an echoed key: "sk-ab******wxyz", "sk-a...wxyz", "••••wxyz".
_MASK_CHARS = "*x•….·"
# What ends a token: whitespace and the punctuation around values in messages and JSON bodies.
_TOKEN = re.compile(r"""[^\s"'`<>()\[\]{},;:=\\]+""")


def scrub_secret(text: str, secret: str | None) -> str:
    """``text`` with every token that could give ``secret`` away replaced by ``***``.

    Servers echo partial keys ("Incorrect API key provided: sk-ab******wxyz"), so a token is scrubbed when it
    holds any 6-character piece of the secret, or a 4+ character prefix of it followed by a mask character, or
    a mask character followed by a 4+ character suffix of it.
    """
    if not secret:
        return text
    piece = min(6, len(secret))
    pieces = {secret[i : i + piece] for i in range(len(secret) - piece + 1)}
    masks = "[" + re.escape(_MASK_CHARS) + "]"
    heads = "|".join(re.escape(secret[:n]) for n in range(len(secret), 3, -1))
    tails = "|".join(re.escape(secret[-n:]) for n in range(len(secret), 3, -1))
    echoed = re.compile(f"(?:{heads}){masks}|{masks}(?:{tails})") if heads else None

    def scrub(match: re.Match[str]) -> str:
        token = match.group(0)
        if any(p in token for p in pieces) or (echoed is not None and echoed.search(token)):
            return "***"
        return token

    return _TOKEN.sub(scrub, text)


def _one_line(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its body: OpenAI ``error.message``, FastAPI ``detail`` or raw text."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        return response.text or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if err:
            return str(err)
        if body.get("detail"):
            return str(body["detail"])
        if body.get("message"):
            return str(body["message"])
    return json.dumps(body)


class OpenAIBackend:
    """A :class:`~robusteval.models.base.Backend` that calls an OpenAI-compatible HTTP server, and a
    :class:`~robusteval.models.base.LogprobBackend` where the server returns prompt log-probs."""

    declared = Capabilities(_GENERATE_ONLY, scores_many=True, scores_in_context=True, asks_server=True)

    def __init__(self, model: str, base_url: str, config: OpenAIOptions | None = None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.config = config or OpenAIOptions()
        self.name = f"openai:{model}@{self.base_url}"
        # Private on purpose: read once from the environment, never printed (see __repr__ and _scrub).
        self.__api_key: str | None = os.environ.get(self.config.api_key_env) or None
        headers = {"Content-Type": "application/json"}
        if self.__api_key:
            headers["Authorization"] = f"Bearer {self.__api_key}"
        limits = httpx.Limits(
            max_connections=self.config.max_concurrency, max_keepalive_connections=self.config.max_concurrency
        )
        self._client = httpx.Client(headers=headers, timeout=self.config.timeout, limits=limits)
        # One backoff for every request of this backend: an outage is waited out together (see models/retry.py).
        self._backoff = SharedBackoff(self.config.backoff_base, self.config.backoff_max)
        # "auto" flips to chat after the first 404 on /completions; the lock keeps the flip single.
        self._use_chat = self.config.endpoint == "chat"
        self._endpoint_lock = threading.Lock()
        self._scorer = PromptScorer(
            self.name, self.base_url, model, mode=self.config.logprobs, text_endpoint=self.config.endpoint != "chat",
            post=lambda url, payload, abort: self._post(url, payload, abort, allow_switch=False),
            run_all=self._run_all,
        )

    # ----- public API -----

    @property
    def capabilities(self) -> frozenset[str]:
        """What this backend is known to offer, without asking the server: ``generate``, plus ``logprobs`` once
        :meth:`resolve_capabilities` found that the server scores prompts. Never does I/O."""
        known = self._scorer.known()
        return _SCORING if known is not None and known.method else _GENERATE_ONLY

    def resolve_capabilities(self) -> frozenset[str]:
        """:attr:`capabilities` after asking the server whether it scores prompts (the probe, once per backend;
        an outage or a rejected key raises :class:`~robusteval.errors.BackendError`)."""
        self._scorer.support()
        return self.capabilities

    @property
    def scoring(self) -> ScoringSupport:
        """How this server scores prompts (``method`` "echo" / "prompt_logprobs", or None) and what the probe saw."""
        return self._scorer.support()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Complete every request with at most ``max_concurrency`` in flight; results in request order."""
        return self._run_all(self._complete, requests)

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "", *,
                              messages: Sequence[Message] = ()) -> list[float]:
        """Summed log-probs of each continuation after ``prefix + prompt`` (one ``/completions`` request for up to
        32 of them), or as the start of the assistant's reply to ``messages`` (vLLM's chat ``prompt_logprobs``).
        A token the server's tokenizer merges across the boundary counts as the continuation's (see
        :mod:`robusteval.models.openai_scoring`); empty continuations score 0. The one-request case of
        :meth:`continuation_logprobs_many`."""
        return self.continuation_logprobs_many([ScoreRequest(prompt, tuple(continuations), prefix,
                                                             freeze_messages(messages))])[0]

    def continuation_logprobs_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        """:meth:`continuation_logprobs` of every request, in order: all their HTTP requests in one pool, at most
        ``max_concurrency`` in flight, each retried as any other request of this backend."""
        return self._scorer.score_many(requests)

    def _run_all(self, work: Callable[[T, threading.Event], R], items: Sequence[T]) -> list[R]:
        """``work(item, abort)`` for every item with at most ``max_concurrency`` in flight; results in order."""
        if not items:
            return []
        abort = threading.Event()
        workers = min(self.config.max_concurrency, len(items))
        if workers == 1:
            return [work(item, abort) for item in items]
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai")
        stopped = False  # Ctrl-C or SIGTERM: requests in flight are not waited for (a stalled server holds them)
        try:
            futures: list[Future[R]] = [pool.submit(work, item, abort) for item in items]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            errors = [e for f in futures if f in done and (e := f.exception()) is not None]
            if errors:
                # Report a real failure, not a sibling that merely stopped because of it.
                raise next((e for e in errors if not isinstance(e, Aborted)), errors[0])
            return [f.result() for f in futures]
        except BaseException as exc:
            # Fail fast (also on Ctrl-C): wake in-flight retry waits instead of burning quota.
            abort.set()
            self._backoff.wake()
            stopped = not isinstance(exc, Exception)
            raise
        finally:
            pool.shutdown(wait=not stopped, cancel_futures=True)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        c = self.config
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, api_key_env={c.api_key_env!r}, "
            f"endpoint={c.endpoint!r}, logprobs={c.logprobs!r}, max_concurrency={c.max_concurrency}, "
            f"timeout={c.timeout}, retry_for={c.retry_for}, max_retries={c.max_retries})"
        )

    # ----- internals -----

    def _scrub(self, text: str) -> str:
        """Remove the API key, and any partial echo of it, from text that may leave this object (errors, logs)."""
        return scrub_secret(text, self.__api_key)

    def _payload(self, request: GenerationRequest, chat: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            self.config.max_tokens_field: request.max_new_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if self.config.reasoning_effort is not None:
            payload["reasoning_effort"] = self.config.reasoning_effort
        if request.messages:
            payload["messages"] = [dict(m) for m in request.messages]
        elif chat:
            payload["messages"] = [{"role": "user", "content": request.full_prompt}]
        else:
            payload["prompt"] = request.full_prompt
        if request.reply_prefix:  # the reply goes on after this text (vLLM's continue_final_message)
            if "messages" in payload:
                payload["messages"].append({"role": "assistant", "content": request.reply_prefix})
                payload.update({"continue_final_message": True, "add_generation_prompt": False})
            else:
                payload["prompt"] += request.reply_prefix
        if "messages" in payload and self.config.thinking is not None:  # the server's template switch (vLLM)
            payload["chat_template_kwargs"] = {"enable_thinking": self.config.thinking == "on"}
        stops = [s for s in request.stop if s]
        if stops:
            payload["stop"] = stops[:MAX_API_STOP]  # the rest are cut client-side
        if request.seed is not None:
            payload["seed"] = request.seed
        return payload

    def _complete(self, request: GenerationRequest, abort: threading.Event) -> Generation:
        while True:
            # A conversation can only go to the chat endpoint; a text prompt goes where the request or endpoint says.
            chat = bool(request.messages) or request.chat or self._use_chat
            url = f"{self.base_url}/{'chat/completions' if chat else 'completions'}"
            try:
                body = self._post(url, self._payload(request, chat), abort, allow_switch=not chat)
            except _SwitchToChat:
                continue
            return self._parse(body, request, chat, url)

    def _post(self, url: str, payload: dict[str, Any], abort: threading.Event, allow_switch: bool) -> Any:
        """POST with retries (:mod:`robusteval.models.retry`): transient failures are retried, waiting on the
        backoff shared by the requests in flight, until ``retry_for`` seconds after the first attempt (or
        ``max_retries`` retries); return the decoded JSON body of a 200 response."""
        cfg = self.config
        began = time.monotonic()
        deadline = began + cfg.retry_for
        attempts = 0
        while True:
            ticket = self._backoff.admit(abort, deadline)
            attempts += 1
            retry_after: float | None = None
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException:
                last_error = f"timed out after {cfg.timeout:g} s"
            except httpx.TransportError as exc:
                last_error = f"connection error ({type(exc).__name__}: {exc})"
            except BaseException:  # Ctrl-C mid-request: a probe must not hold the others back for good
                self._backoff.abandon(ticket)
                raise
            else:
                status = response.status_code
                if status not in RETRYABLE_STATUS:
                    self._backoff.succeeded(ticket)  # the server is there, whatever it thinks of this request
                    return self._answer(response, url, allow_switch)
                last_error = f"HTTP {status}: {_one_line(self._scrub(_server_message(response)))}"
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    retry_after = min(retry_after, cfg.backoff_max)
            now = time.monotonic()
            gave_up = None
            if cfg.max_retries is not None and attempts > cfg.max_retries:
                gave_up = f"max_retries={cfg.max_retries}"
            elif now >= deadline:
                gave_up = f"the retry budget, retry_for={cfg.retry_for:g} s"
            elif retry_after is not None and now + retry_after > deadline:
                gave_up = (f"the server asks to wait {retry_after:g} s (Retry-After), more than the "
                           f"{deadline - now:.1f} s left of retry_for={cfg.retry_for:g} s")
            delay = self._backoff.failed(ticket, retry_after)
            if gave_up is not None:
                raise BackendError(self._scrub(
                    f"{self.name}: POST {url} failed after {attempts} attempt{'s' if attempts != 1 else ''} in "
                    f"{now - began:.1f} s ({gave_up}); last error: {last_error}"))
            if delay is not None:  # once per round, not once per request in flight; the first also on stderr
                waiting(self._scrub(
                    f"{self.name}: {last_error}; retry {self._backoff.rounds} in {delay:.2f} s, shared by the "
                    f"requests in flight (each gives up {cfg.retry_for:g} s after its first attempt)"),
                    first=self._backoff.rounds == 1)

    def _answer(self, response: httpx.Response, url: str, allow_switch: bool) -> Any:
        """The JSON body of a 200; the server's own error otherwise (or the switch to chat of ``auto``)."""
        status = response.status_code
        if status == 200:
            try:
                return response.json()
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
                raise BackendError(self._scrub(f"{self.name}: POST {url} returned HTTP 200 with a body that is "
                                               f"not JSON: {_one_line(response.text)}")) from None
        if status == 404 and allow_switch and self.config.endpoint == "auto":
            with self._endpoint_lock:
                if not self._use_chat:
                    log.info("%s: /completions answered 404; using /chat/completions from now on", self.name)
                    self._use_chat = True
            raise _SwitchToChat()
        message = _one_line(self._scrub(_server_message(response)))
        raise BackendError(self._scrub(f"{self.name}: POST {url} failed with HTTP {status}: {message}"),
                           status=status)

    def _parse(self, body: Any, request: GenerationRequest, chat: bool, url: str) -> Generation:
        try:
            choice = body["choices"][0]
            text = (choice["message"].get("content") if chat else choice["text"]) or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise BackendError(
                self._scrub(
                    f"{self.name}: POST {url}: unexpected response shape: {_one_line(json.dumps(body))}"
                )
            ) from None
        raw_reason = choice.get("finish_reason")
        text, was_cut = cut_at_stop(str(text), request.stop)
        # Our contract knows "stop" and "length"; anything else (tool_calls, content_filter) counts as stop.
        finish_reason = "length" if raw_reason == "length" and not was_cut else "stop"
        usage = body.get("usage") if isinstance(body, dict) else None
        n_tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        meta: dict[str, object] = {"endpoint": "chat" if chat else "completions"}
        if chat:  # the trace a reasoning parser (vLLM) or API (DeepSeek) returns apart from the reply
            thinking = choice["message"].get("reasoning_content") or choice["message"].get("reasoning")
            if isinstance(thinking, str):
                meta["thinking"] = thinking
        details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
        if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
            meta["reasoning_tokens"] = details["reasoning_tokens"]
            if "thinking" not in meta and not text.strip() and _positive(details["reasoning_tokens"]):
                # A hidden trace (OpenAI's o-series return only its token count) that left no reply: a trace
                # was written, none came back, so the reply after it is what is missing (text.thinking).
                meta["thinking"] = ""
        if raw_reason is not None and raw_reason != finish_reason:
            meta["server_finish_reason"] = raw_reason
        return Generation(text=text, finish_reason=finish_reason, n_tokens=n_tokens, meta=meta)


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


class _SwitchToChat(Exception):
    """Internal signal: ``endpoint="auto"`` saw 404 on /completions; redo the request against chat."""


@register_backend("openai", summary="OpenAI-compatible HTTP servers: the OpenAI API, vLLM, llama.cpp, Ollama")
def build_openai_backend(spec: ModelSpec, options: OpenAIOptions | None = None, **keywords: Any) -> OpenAIBackend:
    """Build from ``openai:MODEL@URL`` under ``options`` (:class:`~robusteval.models.openai_options.OpenAIOptions`;
    or as ``keywords``, checked as ``load_model``'s: another backend's options, dtype or device, are ignored)."""
    if options is None or keywords:
        resolved = resolve_options(spec, {**(dataclasses.asdict(options) if options else {}), **keywords})
        options = resolved if isinstance(resolved, OpenAIOptions) else OpenAIOptions()
    return OpenAIBackend(spec.target, spec.base_url or DEFAULT_BASE_URL, options)
