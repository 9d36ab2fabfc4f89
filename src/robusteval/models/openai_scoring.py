"""Prompt log-probabilities from OpenAI-compatible servers: the capability probe, the response formats, and which
of the server's tokens belong to a continuation. The openai backend's ``continuation_logprobs`` and ``continuation_logprobs_many`` run on this.

Formats (text prompts go to ``/completions``, whose ``prompt`` may be a list, so one request scores many texts):

* ``echo``: the OpenAI legacy format, which vLLM (and SGLang, ...) implement. ``echo: true, logprobs: 1,
  max_tokens: 0`` answers with the prompt's own tokens in ``choices[i].logprobs``: ``tokens``, ``token_logprobs``
  (None for the first token: nothing predicts it), ``text_offset``, ``top_logprobs``.
* ``prompt_logprobs``: vLLM's extension. ``prompt_logprobs: 0, max_tokens: 1`` gives ``choices[i].prompt_logprobs``:
  None for the first token, then one ``{token_id: {"logprob", "rank", "decoded_token"}}`` per token. With 0 the
  prompt's own token is the only entry; with k > 0 the top-k come first by rank and the prompt token is only
  recognisable through ``prompt_token_ids``. The same field, at the top level of a ``/chat/completions``
  answer, is the only way to score a chat conversation (the reply continues a final assistant message,
  ``continue_final_message: true``).

Which tokens are the continuation's. The server tokenises ``context + continuation`` as ONE text, and a tokenizer
may merge across the boundary: ``"Answer: " + "yes"`` gives ``... ":" " yes"`` while the context alone ends in
``" "``. Character offsets cannot settle this: vLLM's ``text_offset`` is the running length of every token decoded
on its own (``_create_completion_logprobs`` in vllm/entrypoints/openai/serving_completion.py), so it counts the BOS
string (``"<s>"``) and loses or garbles characters of SentencePiece and byte-fallback tokens. Each request
therefore also carries the context alone, and the continuation is every token after the longest run of tokens
the two tokenisations share (compared by id, or by token text in the echo format). Without a merge that is exactly
the continuation's own tokens and the score is the hf backend's. With a merge the straddling token (``" yes"``) is
scored whole: it is how the model writes those characters, and leaving it out would give ``" yes"`` and ``" no"``
nothing to compare. The score is then log p(" yes" | "...Answer:"): the hf backend's score with the boundary moved
to the start of the straddling token.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.errors import BackendError, UserError
from robusteval.models.base import Message, ScoreRequest

log = logging.getLogger(__name__)

ECHO, PROMPT_LOGPROBS = "echo", "prompt_logprobs"
SCORING_METHODS = (ECHO, PROMPT_LOGPROBS)
#: ``auto`` probes the methods in this order; a named method is probed alone; ``off`` never scores.
LOGPROBS_MODES = ("auto", *SCORING_METHODS, "off")
#: Texts per /completions request (each request also carries the context); further requests run concurrently.
PROMPTS_PER_REQUEST = 32
#: The probe asks what callers ask: a label word after a cue.
PROBE_CONTEXT, PROBE_CONTINUATION = "Question: Is the sky blue? Answer:", " yes"
PROBE_MESSAGES: tuple[Message, ...] = ({"role": "user", "content": "Is the sky blue? Answer yes or no."},)
PROBE_REPLY = "yes"
#: Refusals that are not about the feature: a wrong key must fail the run, not switch scoring off.
_AUTH_STATUS = frozenset({401, 403, 407})

#: A token as the server reports it: what identifies it (id, or text in the echo format) and its log-prob
#: (None for the first token of a prompt).
Token = tuple[object, float | None]

#: POST a JSON payload to a URL and return the decoded body; raises BackendError (with ``status`` on a refusal).
Post = Callable[[str, dict[str, Any], threading.Event], Any]
#: Run ``work(item, abort)`` for every item, concurrently, results in order.
RunAll = Callable[[Callable[[Any, threading.Event], Any], Sequence[Any]], list[Any]]


class ScoringFormatError(ValueError):
    """A response without usable prompt log-probs; the message says what is missing."""


@dataclass(frozen=True)
class ScoringSupport:
    """What the probe found: the method that works, or None and why not."""

    method: str | None  # "echo", "prompt_logprobs", or None: this server cannot score prompts
    detail: str

    def as_dict(self) -> dict[str, str | None]:
        return {"method": self.method, "detail": self.detail}


# ------------------------------------------------------------------------------------------------ parsing
def _logprob(value: Any, where: str) -> float:
    if isinstance(value, dict):
        value = value.get("logprob")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScoringFormatError(f"{where}: log-prob {value!r} is not a number")
    return float(value)


def echo_tokens(logprobs: Any) -> list[Token]:
    """The tokens of an OpenAI-format ``logprobs`` object (``tokens`` and ``token_logprobs``)."""
    if not isinstance(logprobs, dict):
        raise ScoringFormatError("the choice has no 'logprobs' object (the server ignored echo/logprobs)")
    tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list) or not tokens:
        raise ScoringFormatError("'logprobs' lacks the 'tokens' and 'token_logprobs' lists")
    if len(tokens) != len(values):
        raise ScoringFormatError(f"'logprobs' has {len(tokens)} tokens but {len(values)} token_logprobs")
    out: list[Token] = []
    for i, (token, value) in enumerate(zip(tokens, values, strict=True)):
        if not isinstance(token, str):
            raise ScoringFormatError(f"logprobs.tokens[{i}] is {token!r}, not text")
        out.append((token, None if value is None else _logprob(value, f"logprobs.token_logprobs[{i}]")))
    return out


def prompt_logprob_tokens(entries: Any, token_ids: Any = None) -> list[Token]:
    """The tokens of vLLM's ``prompt_logprobs`` list. Each position's entry must be the prompt token alone (as
    ``prompt_logprobs: 0`` asks), unless ``token_ids`` (vLLM's ``prompt_token_ids``) says which entry it is."""
    if not isinstance(entries, list) or not entries:
        raise ScoringFormatError("no 'prompt_logprobs' list in the answer (the server ignored prompt_logprobs)")
    ids = token_ids if isinstance(token_ids, list) and len(token_ids) == len(entries) else None
    out: list[Token] = []
    for i, entry in enumerate(entries):
        where = f"prompt_logprobs[{i}]"
        if entry is None:
            out.append((ids[i] if ids else None, None))
            continue
        if not isinstance(entry, dict) or not entry:
            raise ScoringFormatError(f"{where} is {entry!r}, not a map of token ids")
        if ids is not None:
            if str(ids[i]) not in entry:  # JSON object keys are strings
                raise ScoringFormatError(f"{where} lacks the prompt's token {ids[i]}")
            out.append((ids[i], _logprob(entry[str(ids[i])], where)))
        elif len(entry) == 1:
            ((token_id, value),) = entry.items()
            out.append((str(token_id), _logprob(value, where)))
        else:
            raise ScoringFormatError(f"{where} lists {len(entry)} tokens and the answer has no prompt_token_ids, so "
                                     "the prompt's own token is unknown (ask with prompt_logprobs: 0)")
    return out


def completion_tokens(body: Any, method: str, prompts: Sequence[str]) -> list[list[Token]]:
    """Every prompt's tokens from a ``/completions`` answer to a list of ``prompts``, in prompt order."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or len(choices) != len(prompts) or \
            not all(isinstance(choice, dict) for choice in choices):
        got = len(choices) if isinstance(choices, list) else "no"
        raise ScoringFormatError(f"expected {len(prompts)} choices (one per prompt), got {got}")
    ordered = sorted(choices, key=lambda choice: choice.get("index", 0) if isinstance(choice.get("index"), int) else 0)
    out = []
    for prompt, choice in zip(prompts, ordered, strict=True):
        if method == ECHO:
            # With max_tokens 0 the text is the prompt alone: anything after it would be generated tokens, and
            # they would land in the continuation's score.
            if choice.get("text") != prompt:
                raise ScoringFormatError("the answer's text is not the prompt echoed (no echo, or tokens generated "
                                         "despite max_tokens 0)")
            out.append(echo_tokens(choice.get("logprobs")))
        else:
            out.append(prompt_logprob_tokens(choice.get("prompt_logprobs"), choice.get("prompt_token_ids")))
    return out


def chat_tokens(body: Any) -> list[Token]:
    """The rendered conversation's tokens from a ``/chat/completions`` answer (vLLM puts ``prompt_logprobs`` at the
    top level of the body)."""
    if not isinstance(body, dict):
        raise ScoringFormatError("the answer is not a JSON object")
    if body.get("prompt_logprobs") is not None:
        return prompt_logprob_tokens(body["prompt_logprobs"], body.get("prompt_token_ids"))
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return prompt_logprob_tokens(choices[0].get("prompt_logprobs"), choices[0].get("prompt_token_ids"))
    return prompt_logprob_tokens(None)


def continuation_logprob(context: Sequence[Token], full: Sequence[Token]) -> tuple[float, int]:
    """(summed log-prob of ``full``'s tokens after the ones it shares with ``context``, how many of the context's
    last tokens the continuation re-cut). See the module's note on tokens that straddle the boundary."""
    shared = 0
    for (mine, _), (theirs, _) in zip(context, full, strict=False):
        if mine != theirs:
            break
        shared += 1
    rest = full[shared:]
    if not rest:
        raise ScoringFormatError("the continuation added no token to the context's")
    if any(value is None for _, value in rest):
        raise ScoringFormatError("the continuation starts at the prompt's first token, which has no log-prob")
    return math.fsum(value for _, value in rest if value is not None), len(context) - shared


# ------------------------------------------------------------------------------------------------ scorer
@dataclass(frozen=True)
class _Plan:
    """The HTTP requests that score one :class:`ScoreRequest` (``(url, payload)`` each) and how their answers,
    in the same order, become its scores."""

    jobs: list[tuple[str, dict[str, Any]]]
    read: Callable[[Sequence[Any]], list[float]]


class PromptScorer:
    """Scores continuations through one backend's HTTP client, after a probe (once, on first use) of what the
    server offers. ``post`` and ``run_all`` are the backend's: retries, key scrubbing and concurrency are its;
    ``mode`` is one of :data:`LOGPROBS_MODES`, checked where the user gives it (the backend's config)."""

    def __init__(self, name: str, base_url: str, model: str, *, mode: str, text_endpoint: bool, post: Post,
                 run_all: RunAll) -> None:
        self.name = name
        self.model = model
        self.mode = mode
        self.text_endpoint = text_endpoint  # False for --endpoint chat: nothing goes to /completions
        self._completions_url = f"{base_url}/completions"
        self._chat_url = f"{base_url}/chat/completions"
        self._post = post
        self._run_all = run_all
        self._probe_lock = threading.Lock()  # one probe, even when threads ask at once
        self._count_lock = threading.Lock()
        self._text: ScoringSupport | None = None
        self._chat: ScoringSupport | None = None
        self.recut_tokens = 0  # context tokens re-cut by a straddling continuation token, over this scorer's life

    # ----- what the server offers -----
    def known(self) -> ScoringSupport | None:
        """How text prompts are scored if the probe has run, else None (never probes)."""
        return self._text

    def support(self) -> ScoringSupport:
        """How text prompts are scored (probed on the first call, then remembered)."""
        with self._probe_lock:
            if self._text is None:
                self._text = self._probe_text()
                if self._text.method:
                    log.info("%s: prompt log-probs via %s (%s)", self.name, self._text.method, self._text.detail)
                else:
                    log.info("%s: no prompt log-probs (%s); soft labels, log-prob confidence and log-prob judges "
                             "fall back to sampled labels and generated verdicts", self.name, self._text.detail)
            return self._text

    def chat_support(self) -> ScoringSupport:
        """How conversations are scored: vLLM's ``prompt_logprobs`` on /chat/completions (probed on first use)."""
        text = self.support()
        with self._probe_lock:
            if self._chat is None:
                self._chat = self._probe_chat() if text.method else ScoringSupport(None, text.detail)
                log.info("%s: chat conversations %s (%s)", self.name,
                         "scored via prompt_logprobs" if self._chat.method else "cannot be scored", self._chat.detail)
            return self._chat

    def _probe_text(self) -> ScoringSupport:
        if self.mode == "off":
            return ScoringSupport(None, "switched off (logprobs=off)")
        if not self.text_endpoint:
            return self._unsupported("--endpoint chat sends nothing to /completions, where prompts are scored")
        methods = SCORING_METHODS if self.mode == "auto" else (self.mode,)
        failures = []
        for method in methods:
            def probe(m: str = method) -> float:
                return self._score_text(m, PROBE_CONTEXT, [PROBE_CONTINUATION])[0]

            failure = self._try(probe)
            if isinstance(failure, float):
                return ScoringSupport(method, f"probe: {PROBE_CONTINUATION!r} after {PROBE_CONTEXT!r} scored "
                                              f"{failure:.4f}")
            failures.append(f"{method}: {failure}")
        return self._unsupported("; ".join(failures))

    def _probe_chat(self) -> ScoringSupport:
        if self.mode == ECHO:
            return ScoringSupport(None, "the echo format scores text prompts only (logprobs=echo)")
        outcome = self._try(lambda: self._score_chat(PROBE_MESSAGES, [PROBE_REPLY])[0])
        if isinstance(outcome, float):
            return ScoringSupport(PROMPT_LOGPROBS, f"probe: {PROBE_REPLY!r} as the reply scored {outcome:.4f}")
        return ScoringSupport(None, f"{PROMPT_LOGPROBS} on /chat/completions: {outcome}")

    def _try(self, score: Callable[[], float]) -> float | str:
        """The probe's score, or why there is none. Outages and bad keys are raised: they are no answer about the
        feature, and switching scoring off for them would silently change what a run measures."""
        try:
            value = score()
        except ScoringFormatError as exc:
            return str(exc)
        except BackendError as exc:
            if exc.status is None or exc.status in _AUTH_STATUS:
                raise
            return str(exc).removeprefix(f"{self.name}: ")
        if not math.isfinite(value) or value > 0.0:
            return f"scored {value!r}, which is no log-probability"
        return value

    def _unsupported(self, detail: str) -> ScoringSupport:
        if self.mode not in ("auto", "off"):
            raise UserError(f"{self.name}: logprobs={self.mode} was asked for and cannot be had: {detail}")
        return ScoringSupport(None, detail)

    # ----- scoring -----
    def score_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        """Summed log-prob of each request's continuations: after ``prefix + prompt``, or as the start of the
        assistant's reply to ``messages``. Every HTTP request of every scoring request goes through one
        ``run_all`` (the backend's bounded concurrency and retries)."""
        plans = []
        for request in requests:
            if request.messages:
                chat = self.chat_support()
                if chat.method is None:
                    raise UserError(f"{self.name} scores text prompts but cannot score a chat conversation "
                                    f"({chat.detail}); drop --chat / --judge-chat to score the raw prompt")
                plans.append(self._chat_plan(request.messages, request.continuations))
            else:
                text = self.support()
                if text.method is None:
                    raise UserError(f"{self.name} cannot score continuations: {text.detail}")
                plans.append(self._text_plan(text.method, request.prefix + request.prompt, request.continuations))
        try:
            return self._run(plans)
        except ScoringFormatError as exc:  # the probe passed, so the server changed or answered oddly
            raise BackendError(f"{self.name}: unusable prompt log-probs: {exc}") from None

    def _run(self, plans: Sequence[_Plan]) -> list[list[float]]:
        """Post every plan's payloads concurrently (one ``run_all``), then read each plan's answers."""
        jobs = [job for plan in plans for job in plan.jobs]
        bodies = self._run_all(lambda job, abort: self._post(job[0], job[1], abort), jobs)
        out, at = [], 0
        for plan in plans:
            out.append(plan.read(bodies[at : at + len(plan.jobs)]))
            at += len(plan.jobs)
        return out

    def _score_text(self, method: str, context: str, continuations: Sequence[str]) -> list[float]:
        return self._run([self._text_plan(method, context, continuations)])[0]

    def _score_chat(self, messages: Sequence[Message], continuations: Sequence[str]) -> list[float]:
        return self._run([self._chat_plan(messages, continuations)])[0]

    def _text_plan(self, method: str, context: str, continuations: Sequence[str]) -> _Plan:
        """/completions requests of up to :data:`PROMPTS_PER_REQUEST` texts, each with the context first."""
        if not context:
            raise UserError("continuation_logprobs needs a non-empty prompt")
        todo = [i for i, text in enumerate(continuations) if text]
        groups = [todo[k : k + PROMPTS_PER_REQUEST] for k in range(0, len(todo), PROMPTS_PER_REQUEST)]
        prompts = [[context, *(context + continuations[i] for i in group)] for group in groups]

        def read(bodies: Sequence[Any]) -> list[float]:
            scores = [0.0] * len(continuations)
            for group, texts, body in zip(groups, prompts, bodies, strict=True):
                context_tokens, *fulls = completion_tokens(body, method, texts)
                for i, tokens in zip(group, fulls, strict=True):
                    scores[i] = self._aligned(context_tokens, tokens)
            return scores

        return _Plan([(self._completions_url, self._text_payload(method, texts)) for texts in prompts], read)

    def _chat_plan(self, messages: Sequence[Message], continuations: Sequence[str]) -> _Plan:
        """The context (the conversation up to the reply) and one /chat/completions request per reply."""
        todo = [i for i, text in enumerate(continuations) if text]

        def read(bodies: Sequence[Any]) -> list[float]:
            scores = [0.0] * len(continuations)
            if todo:
                context_tokens = chat_tokens(bodies[0])
                for i, body in zip(todo, bodies[1:], strict=True):
                    scores[i] = self._aligned(context_tokens, chat_tokens(body))
            return scores

        payloads = [self._chat_payload(messages, None), *(self._chat_payload(messages, continuations[i]) for i in todo)]
        return _Plan([(self._chat_url, payload) for payload in payloads] if todo else [], read)

    def _aligned(self, context: Sequence[Token], full: Sequence[Token]) -> float:
        score, recut = continuation_logprob(context, full)
        if recut:
            with self._count_lock:
                first = self.recut_tokens == 0
                self.recut_tokens += recut
            if first:
                log.info("%s: the server's tokenizer merged a continuation with the end of its prompt; the straddling "
                         "token is scored whole as part of the continuation", self.name)
        return score

    def _text_payload(self, method: str, prompts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "prompt": prompts, "temperature": 0.0}
        if method == ECHO:
            payload.update(echo=True, logprobs=1, max_tokens=0)
        else:
            payload.update(prompt_logprobs=0, max_tokens=1)
        return payload

    def _chat_payload(self, messages: Sequence[Message], reply: str | None) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "temperature": 0.0, "max_tokens": 1, "prompt_logprobs": 0}
        turns = [dict(m) for m in messages]
        if reply is None:  # the context: the conversation up to where the assistant's reply starts
            payload.update(messages=turns, add_generation_prompt=True)
        else:
            payload.update(messages=[*turns, {"role": "assistant", "content": reply}], add_generation_prompt=False,
                           continue_final_message=True)
        return payload
