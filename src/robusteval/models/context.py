"""Context limits: which prompts a model cannot read, refused per example before any forward pass.

A prompt longer than the model's context (its position table, or the tokenizer's declared maximum) either fails
deep inside the model or, worse, asks for memory no machine has; callers check each example first
(:func:`context_overflow`) and skip it with one line naming it, counted under :data:`PROMPT_TOO_LONG`.
"""

from __future__ import annotations

from typing import Any

from robusteval.progress import status

#: The skip reason of an example whose prompt (plus the tokens to generate) exceeds the model's context: the
#: same text in every run's ``skip_reasons``, so it counts like any other reason.
PROMPT_TOO_LONG = "prompt longer than the model's context"

#: ``model_max_length`` of tokenizers that declare none (transformers' VERY_LARGE_INTEGER) is above this.
_UNDECLARED = 10**8


def context_length(model: Any, tokenizer: Any = None) -> int | None:
    """Tokens the model can attend over: the smaller of ``max_position_embeddings`` (of the text config, for
    multimodal wrappers) and the tokenizer's declared ``model_max_length``; None when neither says."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config(decoder=True)
    limits = []
    for value in (getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)):
        if isinstance(value, int) and 0 < value < _UNDECLARED:
            limits.append(value)
    return min(limits) if limits else None


def overflow_line(name: str, prompt_tokens: int, new_tokens: int, context: int) -> str:
    """What is wrong with a prompt too long for the model, as one line naming it (``name``: "example 12")."""
    return (f"{name}: prompt is {prompt_tokens:,} tokens + {new_tokens:,} to generate, over the model's "
            f"{context:,}-token context")


def context_overflow(backend: Any, name: str, prompt_tokens: int, new_tokens: int, *,
                     say: bool = True) -> str | None:
    """The :func:`overflow_line` when ``prompt_tokens + new_tokens`` exceeds ``backend.context_length``, else
    None. ``say``: also print and log it, with "skipped" (pipelines skip such examples and go on). Backends
    without a known context (API models: their server refuses) never overflow here."""
    context = getattr(backend, "context_length", None)
    if not isinstance(context, int) or prompt_tokens + new_tokens <= context:
        return None
    line = overflow_line(name, prompt_tokens, new_tokens, context)
    if say:
        status(f"{line}; skipped")
    return line


def request_tokens(backend: Any, request: Any) -> int | None:
    """Prompt tokens of a generation request on ``backend`` (hf: exactly the ids it would read), or None when the
    backend cannot say without a call."""
    request_ids = getattr(backend, "request_ids", None)
    if request_ids is None:
        return None
    prefix, rest = request_ids(request)
    return len(prefix) + len(rest)
