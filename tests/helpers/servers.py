"""Real HTTP servers for tests: a fault-injecting fake OpenAI API and a ``transformers serve`` launcher.

Both run as subprocesses on 127.0.0.1, so tests exercise real sockets, timeouts and retries (no mocks).

* :func:`fake_openai_server` starts this very file as a script (``python servers.py --mode ...``); it
  binds a free port itself and prints it, so there is no port race. Modes:

  - ``ok``: deterministic answers ``[<prompt>]`` split into whitespace tokens, cut at ``max_tokens``
    (finish_reason "length") and at the stop strings it was sent (finish_reason "stop", stop excluded);
  - ``fail-then-ok``: the first ``fail_count`` requests answer ``fail_status`` (with ``Retry-After`` when
    given), then ``ok``;
  - ``always-500``; ``slow`` (sleeps ``sleep`` seconds, then ``ok``); ``401`` (echoes the bearer token in
    its error message, so tests can check scrubbing);
  - ``ok-then-401``: the first ``ok_count`` requests ``ok``, then 401 with the key echoed partially, as the
    OpenAI API does (``Incorrect API key provided: sk-PLANT*********3a9c``: first 8 and last 4 characters);
  - ``chat-only``: ``/v1/completions`` answers 404, chat works;
  - ``reasoning``, ``judge-reasoning``: a trace returned apart (``reasoning_content``) before the reply;
    ``reasoning-cut``, ``hidden-cut``, ``empty-cut``: chat replies cut at the limit with nothing to read
    (:data:`CUT_REPLIES`); ``judge-think-content``: the think tags written into ``content``.

  ``gate=N``: the first N requests are each held (up to 30 s) until N requests have arrived, so a client that
  really sends N at once is seen with N in flight, however loaded the machine is.

  Every request is appended as one JSON line (n, path, authorization, body, inflight, t) to a log file that
  :meth:`FakeServer.requests` reads back; ``t`` is the server's ``time.monotonic()`` when the request arrived.
* :func:`serve_transformers` starts ``transformers serve`` on a model directory and yields its base URL;
  :func:`build_tiny_served_model` writes a tiny random Llama that ``transformers serve`` can load offline.

Import from tests as ``from helpers.servers import ...`` (``tests/`` is put on ``sys.path`` by conftest).
This module must stay importable without pytest: it is also the fake server's script.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
FAKE_MODES = ("ok", "fail-then-ok", "always-500", "slow", "401", "ok-then-401", "chat-only", "reasoning",
              "judge-reasoning", "reasoning-cut", "hidden-cut", "empty-cut", "judge-think-content")
#: The ``reasoning`` mode's chat reply, as vLLM's reasoning parsers and DeepSeek's API return it: the trace apart
#: (``reasoning_content``, stating a wrong answer), the reply in ``content``.
REASONING_REPLY = {"content": "The answer is 7. She had 3 and got 4 more, 3 + 4 = 7.",
                   "reasoning_content": "The answer is 5. Hmm, no: 3 + 4 = 7.", "reasoning_tokens": 12}
#: The ``judge-reasoning`` mode's reply: a verdict of 1 after a trace that first writes 0.
JUDGE_REASONING_REPLY = {"content": "1", "reasoning_content": "Rating: 0? No, every step holds, so 1.",
                         "reasoning_tokens": 9}
#: Replies cut at the token limit (finish_reason "length") with nothing to read: ``reasoning-cut`` spent the budget
#: on a trace returned apart (``content: null``), ``hidden-cut`` on a hidden one (only ``reasoning_tokens``, as
#: OpenAI's o-series), ``empty-cut`` returned nothing at all (empty content, no trace).
CUT_REPLIES = {"reasoning-cut": {"content": None, "reasoning_content": "The answer is 5? Let me check 3 + 4 again",
                                 "reasoning_tokens": 64},
               "hidden-cut": {"content": "", "reasoning_tokens": 64},
               "empty-cut": {"content": ""}}
#: The ``judge-think-content`` mode's reply: a server without a reasoning parser writes the think tags into
#: ``content``; the trace says 0, the verdict after it 1.
JUDGE_THINK_CONTENT = "<think>\nRating: 0? No, every step holds.\n</think>\n\nRating: 1"


def free_port() -> int:
    """A TCP port nobody listens on right now (also used as a 'server down' address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------------------
# Fake OpenAI-compatible server (runs in the subprocess)
# ---------------------------------------------------------------------------------------------------------


def fake_answer(prompt: str, max_tokens: int | None, stops: list[str]) -> tuple[str, str]:
    """What the ``ok`` mode returns for a prompt: ``(text, finish_reason)``. Tests use it as the oracle."""
    tokens = f"[{prompt}]".split()
    finish = "stop"
    if max_tokens is not None and len(tokens) > max_tokens:
        tokens, finish = tokens[:max_tokens], "length"
    text = " ".join(tokens)
    hits = [i for s in stops if s and (i := text.find(s)) >= 0]
    if hits:
        text, finish = text[: min(hits)], "stop"
    return text, finish


def partial_key_echo(token: str) -> str:
    """How the OpenAI API quotes a wrong key: its first 8 and last 4 characters around stars."""
    return f"{token[:8]}{'*' * max(4, len(token) - 12)}{token[-4:]}"


def _make_handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    gate = threading.Condition(lock)
    state = {"n": 0, "inflight": 0}
    log_path = Path(args.log)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like real servers, so the client's pool is exercised

        def log_message(self, format: str, *a: Any) -> None:  # silence the default stderr access log
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                pass

        def do_GET(self) -> None:
            if self.path in ("/health", "/v1/models"):
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            auth = self.headers.get("Authorization")
            with lock:
                state["n"] += 1
                state["inflight"] += 1
                n, inflight = state["n"], state["inflight"]
                record = {
                    "n": n,
                    "path": self.path,
                    "authorization": auth,
                    "body": body,
                    "inflight": inflight,
                    "t": time.monotonic(),
                }
                with log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
                if n <= args.gate:
                    gate.notify_all()
                    gate.wait_for(lambda: state["n"] >= args.gate, timeout=30)
            try:
                self._respond(n, body, auth)
            finally:
                with lock:
                    state["inflight"] -= 1

        def _respond(self, n: int, body: dict[str, Any], auth: str | None) -> None:
            mode = args.mode
            if mode == "401":
                token = (auth or "").removeprefix("Bearer ")
                self._send(
                    401, {"error": {"message": f"Incorrect API key provided: {token}.", "code": "bad_key"}}
                )
                return
            if mode == "ok-then-401" and n > args.ok_count:
                echo = partial_key_echo((auth or "").removeprefix("Bearer "))
                message = (f"Incorrect API key provided: {echo}. You can find your API key at "
                           "https://platform.openai.com/account/api-keys.")
                error = {"message": message, "type": "invalid_request_error", "param": None,
                         "code": "invalid_api_key"}
                self._send(401, {"error": error})
                return
            if mode == "always-500":
                self._send(500, {"error": {"message": "internal failure (always-500)"}})
                return
            if mode == "fail-then-ok" and n <= args.fail_count:
                headers = {"Retry-After": args.retry_after} if args.retry_after else {}
                self._send(args.fail_status, {"error": {"message": f"injected {args.fail_status}"}}, headers)
                return
            if mode == "slow":
                time.sleep(args.sleep)
            if (
                mode == "chat-only"
                and self.path.rstrip("/").endswith("/completions")
                and "chat" not in self.path
            ):
                self._send(404, {"detail": "Not Found"})
                return
            self._ok(body)

        def _ok(self, body: dict[str, Any]) -> None:
            path = self.path.rstrip("/")
            if path.endswith("/chat/completions"):
                messages = body.get("messages") or [{}]
                prompt = str(messages[-1].get("content", ""))
            elif path.endswith("/completions"):
                prompt = str(body.get("prompt", ""))
            else:
                self._send(404, {"detail": "Not Found"})
                return
            if args.jitter:
                # Deterministic per prompt, so concurrent requests finish out of submission order.
                time.sleep(args.jitter * (zlib.crc32(prompt.encode()) % 1000) / 1000)
            stops = body.get("stop") or []
            stops = [stops] if isinstance(stops, str) else list(stops)
            text, finish = fake_answer(prompt, body.get("max_tokens"), stops)
            usage: dict[str, Any] = {"completion_tokens": len(text.split()), "prompt_tokens": len(prompt.split())}
            choice: dict[str, Any]
            if path.endswith("/chat/completions") and args.mode in CUT_REPLIES:
                cut = CUT_REPLIES[args.mode]
                message = {"role": "assistant", "content": cut["content"]}
                if "reasoning_content" in cut:
                    message["reasoning_content"] = cut["reasoning_content"]
                choice = {"index": 0, "message": message}
                if "reasoning_tokens" in cut:
                    usage["completion_tokens_details"] = {"reasoning_tokens": cut["reasoning_tokens"]}
                obj, finish = "chat.completion", "length"
            elif path.endswith("/chat/completions") and args.mode == "judge-think-content":
                choice = {"index": 0, "message": {"role": "assistant", "content": JUDGE_THINK_CONTENT}}
                obj, finish = "chat.completion", "stop"
            elif path.endswith("/chat/completions") and args.mode in ("reasoning", "judge-reasoning"):
                reply = REASONING_REPLY if args.mode == "reasoning" else JUDGE_REASONING_REPLY
                choice = {"index": 0, "message": {"role": "assistant", "content": reply["content"],
                                                  "reasoning_content": reply["reasoning_content"]}}
                usage["completion_tokens_details"] = {"reasoning_tokens": reply["reasoning_tokens"]}
                obj = "chat.completion"
            elif path.endswith("/chat/completions"):
                choice = {"index": 0, "message": {"role": "assistant", "content": text}}
                obj = "chat.completion"
            else:
                choice = {"index": 0, "text": text}
                obj = "text_completion"
            choice["finish_reason"] = finish
            model = body.get("model", "fake")
            self._send(200, {"id": "x", "object": obj, "model": model, "choices": [choice], "usage": usage})

    return Handler


def _serve_fake(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Fault-injecting OpenAI-compatible test server")
    p.add_argument("--mode", choices=FAKE_MODES, default="ok")
    p.add_argument("--log", required=True, help="JSON-lines file receiving one record per request")
    p.add_argument("--port", type=int, default=0, help="0: pick a free port and print it")
    p.add_argument("--fail-count", type=int, default=1)
    p.add_argument("--ok-count", type=int, default=0, help="ok-then-401: requests answered before the 401s")
    p.add_argument("--gate", type=int, default=0, help="hold the first N requests until N have arrived")
    p.add_argument("--fail-status", type=int, default=500)
    p.add_argument("--retry-after", default="", help="Retry-After header value for injected failures")
    p.add_argument("--sleep", type=float, default=5.0, help="seconds the 'slow' mode waits")
    p.add_argument(
        "--jitter", type=float, default=0.0, help="max per-request delay (deterministic per prompt)"
    )
    args = p.parse_args(argv)
    Path(args.log).touch()
    server = ThreadingHTTPServer((LOOPBACK, args.port), _make_handler(args))
    server.daemon_threads = True
    print(f"LISTENING {server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


# ---------------------------------------------------------------------------------------------------------
# Parent-side handles
# ---------------------------------------------------------------------------------------------------------


@dataclass
class FakeServer:
    base_url: str
    port: int
    log_path: Path
    process: subprocess.Popen[str]

    def requests(self) -> list[dict[str, Any]]:
        """Every request the server saw so far, in arrival order."""
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    @property
    def count(self) -> int:
        return len(self.requests())

    def stop(self) -> None:
        """Stop the server now: its process ends, so the port refuses connections (an outage)."""
        _stop_process(self.process)


def _stop_process(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)


@contextlib.contextmanager
def fake_openai_server(
    log_dir: str | Path,
    mode: str = "ok",
    *,
    fail_count: int = 1,
    ok_count: int = 0,
    gate: int = 0,
    fail_status: int = 500,
    retry_after: str = "",
    sleep: float = 5.0,
    jitter: float = 0.0,
    port: int = 0,
    startup_timeout: float = 20.0,
) -> Iterator[FakeServer]:
    """Run the fake server in a subprocess; yields a :class:`FakeServer` (``base_url`` ends in ``/v1``).

    ``port``: listen there (a server brought back where an earlier one was stopped); 0 picks a free one."""
    if mode not in FAKE_MODES:
        raise ValueError(f"unknown fake server mode {mode!r}; use one of {FAKE_MODES}")
    log_path = Path(log_dir) / f"fake-{mode}-{time.monotonic_ns()}.jsonl"
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--mode", mode, "--log", str(log_path),
        "--fail-count", str(fail_count), "--ok-count", str(ok_count), "--gate", str(gate),
        "--fail-status", str(fail_status), "--retry-after", retry_after,
        "--sleep", str(sleep), "--jitter", str(jitter), "--port", str(port),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], startup_timeout)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("LISTENING "):
            _stop_process(proc)
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"fake server did not start (got {line!r}); stderr: {err[-2000:]}")
        port = int(line.split()[1])
        yield FakeServer(f"http://{LOOPBACK}:{port}/v1", port, log_path, proc)
    finally:
        _stop_process(proc)


# ---------------------------------------------------------------------------------------------------------
# transformers serve
# ---------------------------------------------------------------------------------------------------------

_SENTENCES = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "one two three four five six seven eight nine ten",
    "question : what is two plus two ? answer : four",
    "red green blue yellow black white",
    # transformers' StopStringCriteria probes the vocab with the literal string "abcdef"; it must be a token.
    "abcdef",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant :{% endif %}"
)


def build_tiny_served_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random LlamaForCausalLM + word-level tokenizer (with chat template) into ``out_dir``.

    Word-level on purpose: outputs are readable words, so stop-string tests can pick a word from the
    output. Special tokens get zero output weights so greedy decoding never ends early on ``</s>``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with single spaces
    tok.train_from_iterator(
        _SENTENCES, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"])
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE  # transformers serve's chat endpoint needs one
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for special in tokenizer.all_special_ids:
            model.lm_head.weight[special] = 0.0
    model.save_pretrained(out)
    return out


def _wait_healthy(url: str, proc: subprocess.Popen[Any], deadline: float) -> bool:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def serve_transformers(
    model_dir: str | Path,
    *,
    device: str = "cpu",
    startup_timeout: float = 120.0,
    log_path: str | Path | None = None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[str]:
    """Run ``transformers serve`` pinned to ``model_dir``; yield ``http://127.0.0.1:PORT/v1``.

    The model is preloaded (positional FORCE_MODEL), so once ``/health`` answers, requests are fast.
    Requests must name the model exactly as ``str(model_dir)`` (the server rejects any other name).
    Offline: HF_HUB_OFFLINE=1. Server output goes to ``log_path`` (default: next to the model).
    """
    model_dir = Path(model_dir)
    log_file = Path(log_path) if log_path else model_dir.parent / f"{model_dir.name}-serve.log"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),  # leave the test process a core
    }
    last_error = ""
    for _ in range(3):  # free_port() can race with another process; retry on a fresh port
        port = free_port()
        cmd = [
            sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir),
            "--host", LOOPBACK, "--port", str(port), "--device", device, "--log-level", "warning",
            *extra_args,
        ]  # fmt: skip
        with log_file.open("w", encoding="utf-8") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            if _wait_healthy(f"http://{LOOPBACK}:{port}/health", proc, time.monotonic() + startup_timeout):
                yield f"http://{LOOPBACK}:{port}/v1"
                return
            tail = log_file.read_text(encoding="utf-8", errors="replace")[-3000:]
            last_error = f"exit code {proc.poll()}; log tail:\n{tail}"
            if "address already in use" not in tail.lower():
                break
        finally:
            _stop_process(proc)
    raise RuntimeError(f"transformers serve did not become healthy for {model_dir}: {last_error}")


if __name__ == "__main__":
    _serve_fake()
