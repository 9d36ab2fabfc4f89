"""The small contract between model backends and everything that uses a model.

Attacks, evaluators and judges talk to a :class:`Backend`; they never import a concrete backend.
A backend declares what it can do in ``capabilities`` and, as a class, in ``declared`` (:class:`Capabilities`:
whether it scores many requests at once, takes a prefix and messages, asks its server); a caller that needs more than ``generate``
checks with :func:`require` and fails early with a sentence instead of deep inside torch.

``capabilities`` never does I/O (``isinstance(x, Backend)`` reads it before Python 3.12). Whether a backend can
score continuations may have to be learnt from a server (``openai``: does it return prompt log-probs?): such a
backend answers it in ``resolve_capabilities()``, and callers that would score ask :func:`can_score` (or
``require(backend, LOGPROBS, ...)``), which is the one place the question reaches the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, overload, runtime_checkable

from robusteval.errors import UserError

# Capability names. ``generate`` is universal; the rest are optional.
# Final: their types are the literals, so ``require(backend, WHITEBOX, ...)`` picks the overload that narrows.
GENERATE: Final = "generate"
LOGPROBS: Final = "logprobs"  # teacher-forced log-probabilities of a continuation
WHITEBOX: Final = "whitebox"  # tokenizer, embedding matrix, forward from embeddings, gradients, prefix KV cache


@dataclass(frozen=True)
class Capabilities:
    """What a backend class declares about itself (its class attribute ``declared``), read instead of looking for
    methods or reading signatures. A backend that declares nothing is served through the base protocol alone.

    ``offers``: the capability names it has without I/O (its ``capabilities``, before any probe);
    ``scores_many``: it has ``continuation_logprobs_many`` (many score requests at once);
    ``scores_in_context``: its ``continuation_logprobs`` takes ``prefix=`` and ``messages=``;
    ``asks_server``: ``resolve_capabilities()`` may learn more from its server (an API backend's probe)."""

    offers: frozenset[str] = frozenset({GENERATE})
    scores_many: bool = False
    scores_in_context: bool = False
    asks_server: bool = False


def declared_capabilities(backend: object) -> Capabilities:
    """``backend.declared`` (see :class:`Capabilities`), or, for a backend that declares nothing, its
    ``capabilities`` through the base protocol alone."""
    declared = getattr(backend, "declared", None)
    if isinstance(declared, Capabilities):
        return declared
    return Capabilities(frozenset(getattr(backend, "capabilities", ()) or (GENERATE,)))


#: One chat turn, OpenAI style: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = dict[str, str]


def freeze_messages(messages: Sequence[Mapping[str, str]]) -> tuple[Message, ...]:
    """``messages`` as a tuple of plain ``{"role", "content"}`` dicts (checked, so a typo fails here and not
    inside a chat template or an HTTP server)."""
    out = []
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise ValueError(f"chat message {index}: needs string 'role' and 'content', got {dict(message)!r}")
        out.append({"role": role, "content": content})
    return tuple(out)


@dataclass(frozen=True)
class GenerationRequest:
    """One completion request. ``temperature == 0`` means greedy decoding.

    A request is either text (``prefix + prompt``) or a conversation (``messages``): when ``messages`` is set it
    *is* the request, ``prompt`` and ``prefix`` are ignored, the hf backend renders it with the tokenizer's chat
    template and API backends send it to ``/chat/completions`` as given.
    """

    prompt: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # A hint for API backends: send the text prompt as one user message to /chat/completions. Completion
    # backends (hf) send the text as is; to use a model's chat template, give ``messages``.
    chat: bool = False
    # Text shared by many requests (in-context exemplars) that goes before ``prompt``. Backends that can,
    # encode it once and reuse its KV cache; others simply send ``prefix + prompt``.
    prefix: str = ""
    # Chat turns; the earlier turns (before the final user turn) play the role of ``prefix`` for caching.
    messages: tuple[Message, ...] = ()
    # Text the reply already holds (a thinking model's closed trace, under budget forcing): the generation
    # continues after it and does not repeat it.
    reply_prefix: str = ""

    def __post_init__(self) -> None:
        if self.messages:
            object.__setattr__(self, "messages", freeze_messages(self.messages))

    @property
    def full_prompt(self) -> str:
        return self.prefix + self.prompt

    def key(self) -> dict[str, object]:
        """Everything that determines the output; used to key stored units of work."""
        key: dict[str, object] = {
            "prompt": self.prompt,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stop": list(self.stop),
            "seed": self.seed,
            "chat": self.chat,
            "prefix": self.prefix,
        }
        # Only when set: text requests keep the keys they always had, so stored runs stay resumable.
        if self.messages:
            key["messages"] = [dict(m) for m in self.messages]
        if self.reply_prefix:
            key["reply_prefix"] = self.reply_prefix
        return key


@dataclass(frozen=True)
class ScoreRequest:
    """One ``continuation_logprobs(prompt, continuations, prefix, messages=messages)`` call as data, so that many
    can be scored at once (:meth:`LogprobBackend.continuation_logprobs_many`, :func:`score_requests`)."""

    prompt: str = ""
    continuations: tuple[str, ...] = ()
    prefix: str = ""
    messages: tuple[Message, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.continuations, str):
            raise TypeError("ScoreRequest.continuations: give a sequence of strings, not one string")
        object.__setattr__(self, "continuations", tuple(self.continuations))
        if self.messages:
            object.__setattr__(self, "messages", freeze_messages(self.messages))


@dataclass
class Generation:
    """A finished completion: the text up to (not including) the first stop string."""

    text: str
    finish_reason: str  # "stop" (a stop string or end of sequence) or "length"
    n_tokens: int | None = None
    meta: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """Anything that turns prompts into text."""

    #: A display name safe to store and print (never contains secrets).
    name: str

    @property
    def capabilities(self) -> frozenset[str]:
        """What the backend can do, without I/O (read-only: a class constant, or a property as openai's)."""
        ...

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Complete every request, in order. Backends batch or parallelise as they can."""
        ...


@runtime_checkable
class LogprobBackend(Backend, Protocol):
    """A backend that can score given continuations (``LOGPROBS`` capability)."""

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "", *,
                              messages: Sequence[Message] = ()) -> list[float]:
        """Sum of log-probabilities of each continuation's tokens, teacher-forced after ``prefix + prompt``, or,
        when ``messages`` is given, after that conversation rendered with its generation prompt (the
        continuation is the start of the assistant's reply; ``prompt`` and ``prefix`` are then ignored)."""
        ...

    # Optional, and so not a member of this protocol (``isinstance`` would refuse backends without it):
    #
    #     def continuation_logprobs_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
    #
    # what ``continuation_logprobs`` gives for every request, in request order, scored together as the backend
    # can (hf: all (request, continuation) rows in as few forwards as its batch size allows; openai: the requests'
    # HTTP calls concurrently). Callers go through :func:`score_requests`, which loops where it is missing.


@runtime_checkable
class WhiteBoxBackend(LogprobBackend, Protocol):
    """Exactly what the white-box attacks (MATCHA token and embedding level) use: a tokenizer, the input
    embeddings, forward passes from embeddings with gradients, and batched greedy decoding after a cached
    prefix. A new backend (a quantised runtime, another framework) implements these to be attackable."""

    tokenizer: Any
    bos_ids: list[int]
    device: Any  # torch.device of the input embeddings

    @property
    def embedding_matrix(self) -> Any:
        """The input-embedding weight [vocab, hidden] (a torch.Tensor)."""
        ...

    @property
    def embed_scale(self) -> float:
        """Factor the model applies to looked-up embeddings (Gemma: sqrt(hidden)); 1.0 for most models."""
        ...

    def embed(self, ids: Any) -> Any:
        """Input embeddings of token ids [B, L] -> [B, L, H], on the model's device."""
        ...

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def forward(self, prefix_ids: Sequence[int], suffix_embeds: Any, logits_to_keep: int = 0) -> Any:
        """Logits of the suffix positions after the (cached) prefix; gradients flow to ``suffix_embeds``."""
        ...

    def decode_batch(self, prefix_ids: list[int], suffixes: Any, *, max_new_tokens: int,
                     stops: Sequence[Sequence[str]] | None = None, **sampling: Any) -> list[Any]:
        """Greedy (or sampled) continuations of token-id lists or one embeddings tensor after the prefix."""
        ...

    def decode_many(self, prefix_ids: list[int], suffixes: Sequence[Sequence[int]], *, max_new_tokens: int,
                    stops: Sequence[Sequence[str]] | None = None, **sampling: Any) -> list[Any]:
        """:meth:`decode_batch` over any number of rows, batched by the backend."""
        ...

    def cut_at_stop(self, row: Any, stops: Sequence[str]) -> Any:
        """A decoded row as if decoding had stopped at the first stop string."""
        ...

    def chat_text(self, messages: Sequence[Message], *, add_generation_prompt: bool = True) -> str:
        """``messages`` rendered by the model's chat template (``--chat``); tokenise it without special tokens."""
        ...

    def chat_prefix_text(self, messages: Sequence[Message]) -> str:
        """The start of :meth:`chat_text` rendered from the turns before the final user turn (what a prefix cache
        holds); "" when the template does not render them as a prefix of the whole."""
        ...


def score_requests(backend: Backend, requests: Sequence[ScoreRequest]) -> list[list[float]]:
    """``continuation_logprobs`` of every request, in order: one ``continuation_logprobs_many`` call where the
    backend declares it (:class:`Capabilities`), else one ``continuation_logprobs`` call per request (passing
    ``prefix`` and ``messages`` only when set, so a backend of the base protocol's two-argument form is served
    too)."""
    requests = list(requests)
    if not requests:
        return []
    if declared_capabilities(backend).scores_many:
        many = backend.continuation_logprobs_many  # type: ignore[attr-defined]
        return [[float(x) for x in scores] for scores in many(requests)]
    score = backend.continuation_logprobs  # type: ignore[attr-defined]
    out = []
    for request in requests:
        options: dict[str, Any] = {}
        if request.prefix:
            options["prefix"] = request.prefix
        if request.messages:
            options["messages"] = request.messages
        out.append([float(x) for x in score(request.prompt, list(request.continuations), **options)])
    return out


def resolve_capabilities(backend: Backend) -> frozenset[str]:
    """What ``backend`` can do, asking its server where the backend declares it must (``asks_server``: an API
    backend's probe, once per backend: ``backend.resolve_capabilities()``); ``backend.capabilities`` for every
    other backend."""
    if declared_capabilities(backend).asks_server:
        return frozenset(backend.resolve_capabilities())  # type: ignore[attr-defined]
    return frozenset(backend.capabilities)


def can_score(backend: Backend) -> bool:
    """Whether ``backend`` scores continuations (``LOGPROBS``), resolved as :func:`resolve_capabilities` does."""
    return LOGPROBS in backend.capabilities or LOGPROBS in resolve_capabilities(backend)


def scoring_note(backend: Backend) -> str:
    """Why ``backend`` cannot score continuations, where it can say (an API backend's probe of its server), as
    " (...)" for an error message; "" otherwise."""
    if can_score(backend):
        return ""
    detail = getattr(getattr(backend, "scoring", None), "detail", "")
    return f" (server: {detail})" if detail else ""


@overload
def require(backend: Backend, capability: Literal["whitebox"], purpose: str) -> WhiteBoxBackend: ...
@overload
def require(backend: Backend, capability: Literal["logprobs"], purpose: str) -> LogprobBackend: ...
@overload
def require(backend: Backend, capability: str, purpose: str) -> Backend: ...
def require(backend: Backend, capability: str, purpose: str) -> Backend:
    """``backend``, narrowed to the protocol of ``capability``; a clear sentence when it lacks it.

    ``LOGPROBS`` is resolved (:func:`resolve_capabilities`: an API backend may ask its server); any other
    capability is what ``capabilities`` says, without I/O (a white-box attack on an API model fails at once,
    even when the server is down)."""
    offered = backend.capabilities
    if capability == LOGPROBS and capability not in offered:
        offered = resolve_capabilities(backend)
    if capability not in offered:
        have = ", ".join(sorted(offered))
        why = scoring_note(backend) if capability == LOGPROBS else ""
        raise UserError(
            f"{purpose} needs a model backend with the '{capability}' capability; "
            f"{backend.name} offers only: {have}{why}. Use an 'hf:' model for white-box work."
        )
    return backend
