"""A real backend seen through an API-like window (generation only), for tests of LLM judges' re-asks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from robusteval.models import GENERATE, Generation, GenerationRequest


class GenerateOnly:
    """The real backend seen through an API-like window: generation only, every batch of requests recorded.
    ``readable_from_seed``: from the re-ask with that seed on, the real output is prefixed with "1", as a model
    that finally answers would (the re-ask logic is under test, not the model)."""

    def __init__(self, inner: Any, readable_from_seed: int | None = None):
        self.inner = inner
        self.name = inner.name
        self.capabilities = frozenset({GENERATE})
        self.batches: list[list[GenerationRequest]] = []
        self.readable_from_seed = readable_from_seed

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.batches.append(list(requests))
        out = self.inner.generate(requests)
        start = self.readable_from_seed
        return [replace(o, text="1" + o.text) if start is not None and (r.seed or 0) >= start else o
                for r, o in zip(requests, out, strict=True)]
