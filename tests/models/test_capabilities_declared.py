"""Capabilities are what a backend class declares (``declared = Capabilities(...)``), not what its methods or
signatures happen to be: score_requests and resolve_capabilities read the declaration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robusteval.models.base import (
    GENERATE,
    LOGPROBS,
    Capabilities,
    Generation,
    GenerationRequest,
    ScoreRequest,
    declared_capabilities,
    resolve_capabilities,
    score_requests,
)


class LengthScorer:
    """Scores a continuation by minus its length; records which scoring entry point was used."""

    capabilities = frozenset({GENERATE, LOGPROBS})

    def __init__(self) -> None:
        self.name, self.calls = "length-scorer", []  # type: ignore[var-annotated]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [Generation("", "stop") for _ in requests]

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "", *,
                              messages: Any = ()) -> list[float]:
        self.calls.append("one")
        return [-float(len(prefix + prompt + c)) for c in continuations]

    def continuation_logprobs_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        self.calls.append("many")
        return [self.continuation_logprobs(r.prompt, r.continuations, r.prefix) for r in requests]

    def resolve_capabilities(self) -> frozenset[str]:
        self.calls.append("asked the server")
        return frozenset({GENERATE})


class DeclaresMany(LengthScorer):
    declared = Capabilities(frozenset({GENERATE, LOGPROBS}), scores_many=True, scores_in_context=True)


class DeclaresAServer(LengthScorer):
    declared = Capabilities(frozenset({GENERATE}), asks_server=True)


REQUESTS = [ScoreRequest("a", ("b", "cc")), ScoreRequest("dd", ("e",), prefix="p")]


def test_a_backend_that_declares_nothing_is_served_through_the_base_protocol() -> None:
    backend = LengthScorer()
    assert declared_capabilities(backend) == Capabilities(frozenset({GENERATE, LOGPROBS}))
    assert score_requests(backend, REQUESTS) == [[-2.0, -3.0], [-4.0]]
    assert backend.calls == ["one", "one"]  # it has continuation_logprobs_many, but did not declare it
    assert resolve_capabilities(backend) == backend.capabilities and "asked the server" not in backend.calls


def test_declared_batch_scoring_and_server_probe_are_used() -> None:
    many = DeclaresMany()
    assert score_requests(many, REQUESTS) == [[-2.0, -3.0], [-4.0]]
    assert many.calls[0] == "many"
    server = DeclaresAServer()
    assert resolve_capabilities(server) == frozenset({GENERATE}) and server.calls == ["asked the server"]


def test_the_hf_backend_declares_what_it_does(tiny_backend: Any) -> None:
    declared = declared_capabilities(tiny_backend)
    assert declared.scores_many and declared.scores_in_context and not declared.asks_server
    assert declared.offers == tiny_backend.capabilities
    together = score_requests(tiny_backend, REQUESTS)
    alone = [tiny_backend.continuation_logprobs(r.prompt, list(r.continuations), r.prefix) for r in REQUESTS]
    assert [[round(x, 4) for x in row] for row in together] == [[round(x, 4) for x in row] for row in alone]
