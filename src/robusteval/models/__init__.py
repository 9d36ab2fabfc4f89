"""Model backends behind one small protocol (see ``base.py``); build one with :func:`load_backend`."""

from robusteval.models.base import (
    GENERATE,
    LOGPROBS,
    WHITEBOX,
    Backend,
    Generation,
    GenerationRequest,
    LogprobBackend,
    ScoreRequest,
    WhiteBoxBackend,
    require,
    score_requests,
)
from robusteval.models.loading import load_backend, load_model
from robusteval.models.registry import (
    BACKENDS,
    ModelSpec,
    parse_spec,
    register_backend,
)

__all__ = [
    "BACKENDS",
    "GENERATE",
    "LOGPROBS",
    "WHITEBOX",
    "Backend",
    "Generation",
    "GenerationRequest",
    "LogprobBackend",
    "ModelSpec",
    "ScoreRequest",
    "WhiteBoxBackend",
    "load_backend",
    "load_model",
    "parse_spec",
    "register_backend",
    "require",
    "score_requests",
]
