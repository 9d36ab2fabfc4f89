"""A real OpenAI-compatible HTTP server that answers from a real tiny HF model, with prompt log-probs in the formats
vLLM sends, for the openai backend's scoring tests (no vLLM runs here: it needs a GPU build of its own torch).

It runs in a thread of the test process (:func:`scoring_server`), on 127.0.0.1, so CLI subprocesses reach it too.
The numbers are the model's own: one forward over the prompt's tokens, log-softmax in float32. Modes:

* ``echo``: ``echo`` + ``logprobs`` on ``/v1/completions`` answer as vLLM's ``_create_completion_logprobs`` builds
  it: ``tokens`` decoded one by one, ``token_logprobs`` (None first), ``text_offset`` = running length of those
  strings (so the BOS string shifts every offset, as on vLLM), ``top_logprobs``. ``prompt_logprobs`` is ignored.
* ``prompt_logprobs``: vLLM's extension, on ``/v1/completions`` (``choices[i].prompt_logprobs``) and on
  ``/v1/chat/completions`` (top level, with ``add_generation_prompt`` / ``continue_final_message``); ``echo`` is
  ignored, as a server without it would.
* ``plain``: ignores ``echo``, ``logprobs`` and ``prompt_logprobs``: text only.

Tokenisation as vLLM does it for Llama-family models: BOS + the text's tokens on /completions; the chat template's
rendering (which writes BOS itself) on /chat/completions. Generation is greedy. Every request body is kept in
:attr:`ScoringServer.requests`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import torch

MODES = ("echo", "prompt_logprobs", "plain")
LOOPBACK = "127.0.0.1"
_MAX_GENERATED = 16  # the tests' requests ask for a few tokens; this bounds a forgotten max_tokens


class TinyLM:
    """The model behind the server: token log-probs and greedy continuations, one call at a time."""

    def __init__(self, model_dir: str | Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        from robusteval.models.hf import cache_argument

        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
        self.cache_kwarg = cache_argument(self.model)  # transformers 5.24 renamed past_key_values to cache
        self.lock = threading.Lock()

    def text_ids(self, text: str) -> list[int]:
        return [self.tokenizer.bos_token_id, *self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def chat_ids(self, body: dict[str, Any]) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            body["messages"], tokenize=False, add_generation_prompt=body.get("add_generation_prompt", True),
            continue_final_message=body.get("continue_final_message", False))
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    @torch.no_grad()
    def log_probs(self, ids: list[int]) -> torch.Tensor:
        """[len(ids) - 1, vocab]: row t is the distribution of token t + 1."""
        with self.lock:
            logits = self.model(torch.tensor([ids])).logits[0, :-1]
        return torch.log_softmax(logits.float(), dim=-1)

    @torch.no_grad()
    def generate(self, ids: list[int], max_tokens: int, stops: list[str] | None = None) -> list[int]:
        """Greedy tokens after ``ids``, up to EOS or the token that completes a stop string (kept: the text is cut
        at the stop string by :meth:`text`)."""
        from robusteval.models.hf import returned_cache

        out: list[int] = []
        with self.lock:
            cache, step = None, ids
            for _ in range(min(max_tokens, _MAX_GENERATED)):
                result = self.model(torch.tensor([step]), **{self.cache_kwarg: cache}, use_cache=True)
                cache, token = returned_cache(result), int(result.logits[0, -1].argmax())
                out.append(token)
                if token == self.tokenizer.eos_token_id or any(s in self.text(out) for s in stops or ()):
                    break
                step = [token]
        return out

    def text(self, ids: list[int], stops: list[str] | None = None) -> str:
        text = str(self.tokenizer.decode(ids, skip_special_tokens=True))
        cuts = [i for s in stops or () if (i := text.find(s)) >= 0]
        return text[: min(cuts)] if cuts else text

    def piece(self, token_id: int) -> str:
        return str(self.tokenizer.decode([token_id]))


def _echo_logprobs(lm: TinyLM, ids: list[int]) -> dict[str, Any]:
    """OpenAI-format logprobs of ``ids`` with top-1 alternatives, as vLLM builds them for ``logprobs: 1``."""
    logp = lm.log_probs(ids)
    tokens = [lm.piece(t) for t in ids]
    offsets, position = [], 0
    for token in tokens:
        offsets.append(position)
        position += len(token)
    token_logprobs: list[float | None] = [None]
    top: list[dict[str, float] | None] = [None]
    for t in range(1, len(ids)):
        row = logp[t - 1]
        token_logprobs.append(float(row[ids[t]]))
        best = int(row.argmax())
        top.append({tokens[t]: float(row[ids[t]]), lm.piece(best): float(row[best])})
    return {"tokens": tokens, "token_logprobs": token_logprobs, "text_offset": offsets, "top_logprobs": top}


def _prompt_logprobs(lm: TinyLM, ids: list[int], k: int) -> list[dict[str, Any] | None]:
    """vLLM's ``prompt_logprobs``: None, then per token the top-k by rank and the prompt token (first when k = 0)."""
    logp = lm.log_probs(ids)
    out: list[dict[str, Any] | None] = [None]
    for t in range(1, len(ids)):
        row = logp[t - 1]
        entry: dict[str, Any] = {}
        for rank, token in enumerate(row.topk(k).indices.tolist() if k > 0 else [], start=1):
            entry[str(token)] = {"logprob": float(row[token]), "rank": rank, "decoded_token": lm.piece(token)}
        rank = int((row > row[ids[t]]).sum()) + 1
        entry.setdefault(str(ids[t]), {"logprob": float(row[ids[t]]), "rank": rank, "decoded_token": lm.piece(ids[t])})
        out.append(entry)
    return out


def _stops(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop") or []
    return [stop] if isinstance(stop, str) else list(stop)


def _make_handler(lm: TinyLM, mode: str, requests: list[dict[str, Any]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            requests.append({"path": self.path, "body": body})
            if self.path == "/v1/completions":
                self._send(200, self._completions(body))
            elif self.path == "/v1/chat/completions":
                self._send(200, self._chat(body))
            else:
                self._send(404, {"detail": "Not Found"})

        def _completions(self, body: dict[str, Any]) -> dict[str, Any]:
            prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
            max_tokens, stops = int(body.get("max_tokens", 16)), _stops(body)
            echo = mode == "echo" and body.get("echo") and body.get("logprobs") is not None
            choices, used = [], 0
            for index, prompt in enumerate(prompts):
                ids = lm.text_ids(prompt)
                new = lm.generate(ids, max_tokens, stops)
                choice: dict[str, Any] = {"index": index, "text": lm.text(new, stops), "logprobs": None,
                                          "finish_reason": "length"}
                if echo:  # (the tests echo with max_tokens 0 only: prompt tokens, as vLLM returns them)
                    choice["text"] = prompt + choice["text"]
                    choice["logprobs"] = _echo_logprobs(lm, ids + new)
                if mode == "prompt_logprobs" and body.get("prompt_logprobs") is not None:
                    choice["prompt_logprobs"] = _prompt_logprobs(lm, ids, int(body["prompt_logprobs"]))
                choices.append(choice)
                used += len(ids)
            return {"id": "cmpl-test", "object": "text_completion", "model": body.get("model"), "choices": choices,
                    "usage": {"prompt_tokens": used}}

        def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
            ids = lm.chat_ids(body)
            new = lm.generate(ids, int(body.get("max_tokens", 16)), _stops(body))
            answer: dict[str, Any] = {
                "id": "chatcmpl-test", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": lm.text(new, _stops(body))},
                             "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(new)},
            }
            if mode == "prompt_logprobs" and body.get("prompt_logprobs") is not None:
                answer["prompt_logprobs"] = _prompt_logprobs(lm, ids, int(body["prompt_logprobs"]))
            return answer

    return Handler


@dataclass
class ScoringServer:
    base_url: str
    mode: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    def spec(self, model: str = "tiny") -> str:
        return f"openai:{model}@{self.base_url}"


@contextlib.contextmanager
def scoring_server(lm: TinyLM, mode: str) -> Iterator[ScoringServer]:
    """Serve ``lm`` in ``mode`` on a free loopback port for the duration of the block."""
    if mode not in MODES:
        raise ValueError(f"unknown scoring server mode {mode!r}; use one of {MODES}")
    requests: list[dict[str, Any]] = []
    server = ThreadingHTTPServer((LOOPBACK, 0), _make_handler(lm, mode, requests))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield ScoringServer(f"http://{LOOPBACK}:{server.server_address[1]}/v1", mode, requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
