"""Budget forcing: a thinking model's trace capped at ``max_thinking_tokens``, its reply generated apart.

Two generations per request (s1's budget forcing, done at the request level so every backend takes it):

1. the trace, up to ``max_thinking_tokens`` and stopped by the closing tag;
2. the reply, after the trace and the closing tag (``GenerationRequest.reply_prefix``), with the request's own
   budget and stop strings. A trace that ran out of budget is closed by force first (``thinking_forced``).

A model that writes no trace (its prompt did not open one and it did not open one itself) answered in the first
generation: that text, cut at the request's stop strings, is its reply.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robusteval.models.base import Backend, Generation, GenerationRequest
from robusteval.text.thinking import ReasoningFormat, ReasoningOptions, resolve_format


def generate_thinking(backend: Backend, requests: Sequence[GenerationRequest], fmt: ReasoningFormat,
                      options: ReasoningOptions, opened: Sequence[bool]) -> list[Generation]:
    """``backend.generate(requests)``, with the trace capped by budget forcing when ``options`` set
    ``max_thinking_tokens`` and the model writes think tags (:func:`generate_with_budget`)."""
    if options.max_thinking_tokens is None or fmt.kind != "think-tags":
        return backend.generate(requests)
    return generate_with_budget(backend, requests, fmt, options.max_thinking_tokens, opened)


def generate_with_budget(backend: Backend, requests: Sequence[GenerationRequest], fmt: ReasoningFormat,
                         max_thinking_tokens: int, opened: Sequence[bool]) -> list[Generation]:
    """Every request's generation with its trace capped (module docstring); each output's ``meta`` says
    ``thinking_forced`` and ``thinking_tokens``. ``opened[i]``: request i's prompt opened the trace."""
    if fmt.kind != "think-tags":
        raise ValueError(f"budget forcing needs think tags, not {fmt.kind}")
    traces = backend.generate([dataclasses.replace(r, max_new_tokens=max_thinking_tokens, stop=(fmt.close_tag,))
                               for r in requests])
    outputs: list[Generation | None] = [None] * len(requests)
    second: dict[int, tuple[str, bool]] = {}
    for i, (request, trace) in enumerate(zip(requests, traces, strict=True)):
        if not (opened[i] or fmt.open_tag in trace.text):  # no trace: this was the reply
            outputs[i] = _cut(trace, request.stop)
            continue
        forced = trace.finish_reason == "length"
        second[i] = (trace.text + ("\n" if forced else "") + fmt.close_tag, forced)
    if second:
        replies = backend.generate([dataclasses.replace(requests[i], reply_prefix=requests[i].reply_prefix + text)
                                    for i, (text, _) in second.items()])
        for (i, (text, forced)), reply in zip(second.items(), replies, strict=True):
            tokens = traces[i].n_tokens
            outputs[i] = Generation(text + reply.text, reply.finish_reason,
                                    None if tokens is None or reply.n_tokens is None else tokens + reply.n_tokens,
                                    {**reply.meta, "thinking_forced": forced, "thinking_tokens": tokens})
    return [out for out in outputs if out is not None]


def _cut(out: Generation, stops: Sequence[str]) -> Generation:
    """``out`` cut at the first of ``stops`` (the first generation ran without them)."""
    hits = [i for stop in stops if stop and (i := out.text.find(stop)) >= 0]
    if not hits:
        return dataclasses.replace(out, meta={**out.meta, "thinking_forced": False})
    return dataclasses.replace(out, text=out.text[: min(hits)], finish_reason="stop",
                               meta={**out.meta, "thinking_forced": False})


def local_chat_template(model: dict[str, Any] | None) -> str | None:
    """The chat template a local model directory ships (``chat_template.jinja``, else ``tokenizer_config.json``'s
    ``chat_template``), read without loading the model: run identities are decided before it loads. None for a
    model that is not a local directory, or one without a template."""
    source = Path(str((model or {}).get("source") or ""))
    if not (model or {}).get("source") or not source.is_dir():
        return None
    jinja = source / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    try:
        config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        template = next((t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"),
                        None)
    return template if isinstance(template, str) else None


def declared_format(options: ReasoningOptions, model: dict[str, Any] | None) -> ReasoningFormat:
    """The reasoning format ``options`` resolve to for the model of identity ``model``, from its local files (the
    same as :meth:`ReasoningOptions.resolve` on the loaded model where the files are local)."""
    return resolve_format(options.reasoning or "auto", local_chat_template(model), options.think_tags)
