"""The ``openai:`` backend's options (:class:`OpenAIOptions`), light: the command line reads them without httpx."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import WHEN_SET, ConfigError, check_at_least, validated
from robusteval.models.openai_scoring import LOGPROBS_MODES
from robusteval.models.options import CHANGED, CommonOptions, backend_option

ENDPOINTS = ("completions", "chat", "auto")
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")


@validated
@dataclass(frozen=True)
class OpenAIOptions(CommonOptions):
    """An OpenAI-compatible HTTP server (``openai:MODEL@URL``): the OpenAI API, vLLM, llama.cpp, Ollama, ..."""

    api_key_env: str = backend_option(
        "OPENAI_API_KEY", replaces="--api-key-env",
        help="the environment variable holding the key (unset variable: no auth header)")
    max_concurrency: int = backend_option(8, replaces="--max-concurrency", help="parallel requests")
    timeout: float = backend_option(60.0, replaces="--request-timeout", help="seconds per HTTP attempt")
    retry_for: float = backend_option(
        120.0, replaces="--retry-for",
        help="seconds a failing request (server down, 429, 5xx, timeout) is retried, the requests in flight "
        "waiting on one shared backoff; 0: no retry (not in the run identity: change it when resuming)")
    max_retries: int | None = backend_option(None, help="a cap on retries as well (default: as retry_for allows)")
    backoff_base: float = backend_option(0.5, help="seconds: failed round n of the backoff waits up to base*2^(n-1)")
    backoff_max: float = backend_option(30.0, help="seconds: the most one backoff (or Retry-After) waits")
    endpoint: str = backend_option(
        "completions", choices=ENDPOINTS, identity=True, replaces="--endpoint",
        help="where text prompts go: /completions, /chat/completions (as one user message), or auto (chat after "
        "a 404 on /completions); --chat conversations always use chat")
    logprobs: str = backend_option(
        "auto", choices=LOGPROBS_MODES, replaces="--api-logprobs",
        help="how prompts are scored: auto = probe the server once (echo+logprobs on /completions, then vLLM's "
        "prompt_logprobs), falling back to sampled labels / generated verdicts; off = never score")
    reasoning_effort: str | None = backend_option(
        None, choices=REASONING_EFFORTS, identity=WHEN_SET, replaces="--reasoning-effort",
        help="sent as reasoning_effort to reasoning APIs")
    max_tokens_field: str = backend_option(
        "max_tokens", choices=MAX_TOKENS_FIELDS, identity=CHANGED, replaces="--max-tokens-field",
        help="the request field the generation budget goes in (reasoning APIs take max_completion_tokens)")

    def check(self) -> None:
        check_at_least(self, "max_concurrency", 1, optional=False)
        check_at_least(self, "max_retries", 0)
        check_at_least(self, "retry_for", 0, optional=False)
        for name in ("timeout", "backoff_base", "backoff_max"):
            value = getattr(self, name)
            if not 0 < value < float("inf"):
                raise ConfigError(self, name, f"must be seconds > 0, got {value!r}")
        if self.retry_for == float("inf"):
            raise ConfigError(self, "retry_for", "give the seconds a request may be retried, 0 or more (0: no retry)")
        for name in ("timeout", "retry_for", "backoff_base", "backoff_max"):
            object.__setattr__(self, name, float(getattr(self, name)))  # 30 is 30.0 seconds
