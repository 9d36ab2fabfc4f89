"""Budget forcing: a thinking model's trace capped at ``max_thinking_tokens``, its reply generated apart.

Generations per request (s1's budget forcing, done at the request level so every backend takes it):

0. where the prompt does not open the trace (Qwen3's form: the model writes ``<think>`` itself), the model's
   opening: a few tokens, up to and with the opening tag, so the budget never cuts the tag and counts the trace
   only;
1. the trace, after its opening tag, up to ``max_thinking_tokens`` and stopped by the closing tag;
2. the reply, after the trace and the closing tag (``GenerationRequest.reply_prefix``), with the request's own
   budget and stop strings. A trace that ran out of budget is closed by force first (``thinking_forced``).

A model that writes no trace (its prompt did not open one and it did not open one itself) answers as if unforced:
its reply is generated with the request's own budget and stop strings. ``n_tokens`` counts the trace's and the
reply's tokens (not the few before the opening tag).
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
    ``thinking_forced`` and ``thinking_tokens`` (the trace's tokens after its opening tag). ``opened[i]``: request
    i's prompt opened the trace; otherwise the model's own opening is generated first (:func:`_openings`), so the
    budget never cuts the opening tag."""
    if fmt.kind != "think-tags":
        raise ValueError(f"budget forcing needs think tags, not {fmt.kind}")
    outputs: list[Generation | None] = [None] * len(requests)
    starts: dict[int, str] = {i: "" for i in range(len(requests)) if opened[i]}
    for i, found in _openings(backend, requests, fmt, [i for i in range(len(requests)) if not opened[i]]).items():
        if isinstance(found, str):
            starts[i] = found
        else:
            outputs[i] = found
    order = sorted(starts)
    traces = backend.generate([dataclasses.replace(requests[i], reply_prefix=requests[i].reply_prefix + starts[i],
                                                   max_new_tokens=max_thinking_tokens, stop=(fmt.close_tag,))
                               for i in order])
    second: dict[int, tuple[str, bool, int | None]] = {}
    for i, trace in zip(order, traces, strict=True):
        forced = trace.finish_reason == "length"
        second[i] = (starts[i] + trace.text + ("\n" if forced else "") + fmt.close_tag, forced, trace.n_tokens)
    if second:
        replies = backend.generate([dataclasses.replace(requests[i], reply_prefix=requests[i].reply_prefix + text)
                                    for i, (text, _, _) in second.items()])
        for (i, (text, forced, tokens)), reply in zip(second.items(), replies, strict=True):
            outputs[i] = Generation(text + reply.text, reply.finish_reason,
                                    None if tokens is None or reply.n_tokens is None else tokens + reply.n_tokens,
                                    {**reply.meta, "thinking_forced": forced, "thinking_tokens": tokens})
    return [out for out in outputs if out is not None]


#: The tokens a model gets to write its opening tag before the trace's budget starts: a few tokens of lead-in
#: (a space, a newline) plus one per character of the tag (byte-level and SentencePiece tokens hold at least one).
OPENING_LEAD = 8


def _openings(backend: Backend, requests: Sequence[GenerationRequest], fmt: ReasoningFormat,
              todo: Sequence[int]) -> dict[int, str | Generation]:
    """For each request ``i`` in ``todo`` (its prompt does not open the trace): the text up to and with the
    opening tag the model writes (its trace starts there, and the budget counts from there), or, when it opens none
    in its first :data:`OPENING_LEAD` + len(tag) tokens, its generation as if unforced (it answered without a
    trace)."""
    if not todo:
        return {}
    lead = OPENING_LEAD + len(fmt.open_tag)
    firsts = backend.generate([dataclasses.replace(requests[i], max_new_tokens=lead, stop=()) for i in todo])
    found: dict[int, str | Generation] = {}
    plain: list[int] = []
    for i, first in zip(todo, firsts, strict=True):
        at = first.text.find(fmt.open_tag)
        if at >= 0 and not _cut(first, requests[i].stop).text.startswith(first.text[: at + len(fmt.open_tag)]):
            at = -1  # a stop string came before the tag: the reply ended there
        if at >= 0:
            found[i] = first.text[: at + len(fmt.open_tag)]
        elif first.finish_reason == "stop" and first.n_tokens is not None and first.n_tokens <= \
                requests[i].max_new_tokens:
            found[i] = _cut(first, requests[i].stop)  # finished within its own budget: the whole reply
        else:
            plain.append(i)
    for i, out in zip(plain, backend.generate([requests[i] for i in plain]) if plain else [], strict=True):
        found[i] = dataclasses.replace(out, meta={**out.meta, "thinking_forced": False})
    return found


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
