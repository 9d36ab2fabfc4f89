"""Thinking traces: a reasoning model's generation split into its thinking and its reply.

Reasoning models (DeepSeek-R1 distills, Qwen3, gpt-oss, reasoning APIs) write a trace before they answer. Everything
robusteval grades or judges must read the reply only: an answer stated, then revised, inside the trace is not the
model's answer. Formats:

* ``think-tags``: ``<think> ... </think> reply`` (Qwen3, R1 distills; the tags are settable). R1-distill's
  generation prompt already opens the block, so its completions hold only the closing tag (``opened=True``).
* ``harmony``: gpt-oss's channels, ``<|channel|>analysis<|message|> ... <|end|>`` then
  ``<|start|>assistant<|channel|>final<|message|> reply`` (read from text decoded with its special tokens kept).
* ``none``: no trace; the whole generation is the reply (every model without thinking: nothing changes).

A trace that was opened and never closed has no reply: :attr:`Split.truncated`, never graded on a fragment.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from robusteval.config import WHEN_SET, ConfigError, check_at_least, option, shared_block

FORMATS = ("auto", "none", "think-tags", "harmony")
DEFAULT_TAGS = ("<think>", "</think>")
HARMONY_ANALYSIS = "<|channel|>analysis<|message|>"
HARMONY_FINAL = "<|channel|>final<|message|>"
HARMONY_ENDS = ("<|end|>", "<|return|>", "<|call|>")
#: The trace's budget where a method gives a thinking target one by default (MATCHA): DeepSeek-R1 distills write
#: traces of about a thousand tokens on GSM8K-level problems and several thousand on competition math; 4,096 closes
#: most of them, and ``models/memory_plan.py`` sizes the rows per batch for it (128 KiB of KV cache per token at 8B).
DEFAULT_MAX_THINKING_TOKENS = 4096
#: The reason a record with an unclosed trace gives (``skip_reasons`` / ``thinking_truncated``).
THINKING_TRUNCATED = "no answer (thinking truncated)"
#: The reasons a record without a trace gives when its reply is empty (``no_answer``, counted as ``no_reply``).
NO_REPLY_AT_LIMIT = "no reply (empty, cut at the token limit)"
NO_REPLY = "no reply (empty)"


@dataclass(frozen=True)
class ReasoningFormat:
    """How a model's generations hold their thinking (resolved: never ``auto``)."""

    kind: str = "none"  # none | think-tags | harmony
    open_tag: str = DEFAULT_TAGS[0]
    close_tag: str = DEFAULT_TAGS[1]

    def __post_init__(self) -> None:
        if self.kind not in FORMATS[1:]:
            raise ValueError(f"reasoning format {self.kind!r}: expected one of {', '.join(FORMATS[1:])}")
        if self.kind == "think-tags" and not (self.open_tag.strip() and self.close_tag.strip()):
            raise ValueError("think tags: give an opening and a closing tag (OPEN,CLOSE)")

    @property
    def thinks(self) -> bool:
        return self.kind != "none"

    def record(self) -> dict[str, str]:
        """What a summary (and a thinking judge's identity) records of it."""
        if self.kind == "think-tags":
            return {"kind": self.kind, "open": self.open_tag, "close": self.close_tag}
        return {"kind": self.kind}


NO_THINKING = ReasoningFormat()


def parse_tags(text: str | None) -> tuple[str, str]:
    """``"<think>,</think>"`` -> the two tags (``None``: the default ones); a bad value raises ``ValueError``."""
    if text is None:
        return DEFAULT_TAGS
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise ValueError(f"{text!r}: give the opening and the closing tag, comma-separated (<think>,</think>)")
    return parts[0], parts[1]


def detect_format(chat_template: str | None, tags: tuple[str, str] = DEFAULT_TAGS) -> ReasoningFormat:
    """The format a chat template announces: harmony's channels, or the think tags, else none (a model without a
    template is read as it always was)."""
    template = chat_template or ""
    if "<|channel|>" in template:
        return ReasoningFormat("harmony")
    if tags[1] in template:
        return ReasoningFormat("think-tags", *tags)
    return NO_THINKING


def resolve_format(kind: str, chat_template: str | None, tags: str | None = None) -> ReasoningFormat:
    """``--reasoning KIND`` (``auto``: :func:`detect_format`) and ``--think-tags OPEN,CLOSE`` as a format."""
    pair = parse_tags(tags)
    if kind == "auto":
        return detect_format(chat_template, pair)
    if kind == "think-tags":
        return ReasoningFormat(kind, *pair)
    return ReasoningFormat(kind)


@dataclass(frozen=True)
class Split:
    """A generation as thinking and reply. ``thinking`` is None when none was written; ``truncated``: a trace was
    opened and never closed, so ``reply`` is empty and there is no answer to read."""

    thinking: str | None
    reply: str
    truncated: bool = False

    def record(self) -> dict[str, object]:
        return {"thinking": self.thinking, "reply": self.reply, "thinking_truncated": self.truncated}


def split_generation(text: str, fmt: ReasoningFormat, *, opened: bool = False) -> Split:
    """Split ``text`` by ``fmt``; ``opened``: the prompt ended inside an open trace (R1-distill's template), so
    the text starts in the thinking."""
    if fmt.kind == "none":
        return Split(None, text)
    if fmt.kind == "harmony":
        return _split_harmony(text)
    head, close, tail = text.partition(fmt.close_tag)
    start = head.find(fmt.open_tag)
    if not close:
        if opened or start >= 0:  # the block was opened (by the prompt or the model) and never closed
            return Split(head[start + len(fmt.open_tag):] if start >= 0 else head, "", truncated=True)
        return Split(None, text)  # no trace at all: the whole text is the reply
    thinking = head[start + len(fmt.open_tag):] if start >= 0 else head
    # Text before an opening tag (rare) is neither trace nor reply: it is kept with the reply, never dropped.
    before = head[:start] if start >= 0 else ""
    return Split(thinking.strip(), (before + tail).strip() if before.strip() else tail.lstrip())


def split_output(text: str, meta: dict[str, object] | None, fmt: ReasoningFormat, *, opened: bool = False) -> Split:
    """A backend's output split: the trace an API returned apart (``meta["thinking"]``, from ``reasoning_content``)
    with the text as the reply, else :func:`split_generation` of the text."""
    thinking = (meta or {}).get("thinking")
    if isinstance(thinking, str):
        # No reply after the trace (a server that spent the budget on it returns ``content: null``): the trace
        # never reached an answer, as an unclosed one; "" is a hidden trace the API only counted.
        reply = text.strip()
        return Split(thinking.strip(), reply, truncated=not reply)
    return split_generation(text, fmt, opened=opened)


def written_format(text: str, fmt: ReasoningFormat) -> ReasoningFormat:
    """``fmt``, or the default think tags where a model read as one without thinking wrote them anyway: an API whose
    server has no reasoning parser returns the trace in ``content`` (``<think>...</think>Rating: 1``; R1's form
    holds only the closing tag), and the reply is what comes after it."""
    if fmt.kind == "none" and any(tag in text for tag in DEFAULT_TAGS):
        return ReasoningFormat("think-tags")
    return fmt


def no_answer_reason(split: Split, finish_reason: str) -> str | None:
    """Why a generation has no answer to read, or None: its trace never closed (:data:`THINKING_TRUNCATED`), or
    its reply is empty (:data:`NO_REPLY_AT_LIMIT` where the token budget cut it, else :data:`NO_REPLY`)."""
    if split.truncated:
        return THINKING_TRUNCATED
    if not split.reply.strip():
        return NO_REPLY_AT_LIMIT if finish_reason == "length" else NO_REPLY
    return None


#: What a backend reports of a thinking generation beside its text (an API's reasoning tokens, budget forcing).
THINKING_META = ("reasoning_tokens", "thinking_forced", "thinking_tokens")


def read_output(text: str, meta: dict[str, object] | None, fmt: ReasoningFormat, *, opened: bool = False
                ) -> tuple[Split, dict[str, object]]:
    """A thinking model's generation split (:func:`split_output`) and what its record keeps of it: ``thinking``,
    ``reply``, ``thinking_truncated`` and the backend's counts (:data:`THINKING_META`)."""
    split = split_output(text, meta, fmt, opened=opened)
    kept = {name: (meta or {})[name] for name in THINKING_META if name in (meta or {})}
    return split, {**split.record(), **kept}


def read_reply(text: str, meta: dict[str, object] | None, finish_reason: str, fmt: ReasoningFormat, *,
               opened: bool = False) -> tuple[Split, dict[str, object]]:
    """What every answer-reading pipeline (``eval``, ``variants eval``, MATCHA's clean pass) keeps of a generation:
    the split (:func:`read_output` where the model thinks or the API returned a trace apart, else the whole text as
    the reply) and the record's fields, with ``no_answer`` (:func:`no_answer_reason`) when there is no reply to
    read: such an answer is wrong, never graded on a fragment, and counted (:func:`truncation_summary`,
    :func:`no_reply_summary`)."""
    if fmt.thinks or "thinking" in (meta or {}):
        split, kept = read_output(text, meta, fmt, opened=opened)
    else:
        split, kept = Split(None, text), {}
    reason = no_answer_reason(split, finish_reason)
    return split, {**kept, **({"no_answer": reason} if reason is not None else {})}


def _split_harmony(text: str) -> Split:
    analysis = text.find(HARMONY_ANALYSIS)
    final = text.find(HARMONY_FINAL)
    thinking = None
    if analysis >= 0:
        body = text[analysis + len(HARMONY_ANALYSIS): final if final > analysis else len(text)]
        thinking = _cut_end(body).strip()
    if final < 0:
        if analysis >= 0:
            return Split(thinking, "", truncated=True)
        return Split(None, text)
    return Split(thinking, _cut_end(text[final + len(HARMONY_FINAL):]).strip())


def _cut_end(text: str) -> str:
    cuts = [text.find(end) for end in HARMONY_ENDS if end in text]
    return text[: min(cuts)] if cuts else text


@dataclass(frozen=True)
class ReasoningOptions:
    """``--reasoning`` and ``--think-tags``, nested in every config whose method reads answers from generations
    (``eval``, ``variants eval``): in the run identity only when given (``auto`` resolves from the chat template,
    which the model identity fixes)."""

    reasoning: str | None = option(None, choices=FORMATS, identity=WHEN_SET,
                                   help="how the model's generations hold a thinking trace: auto (default: from its "
                                   "chat template), none, think-tags (<think>...</think>) or harmony (gpt-oss); "
                                   "answers are read from the reply only")
    think_tags: str | None = option(None, metavar="OPEN,CLOSE", identity=WHEN_SET,
                                    help="the trace's tags for --reasoning think-tags (default <think>,</think>)")
    max_thinking_tokens: int | None = option(None, metavar="N", identity=WHEN_SET,
                                             help="a thinking trace's budget (think tags only). eval, variants eval: "
                                             "budget forcing, the trace gets N tokens after its opening tag, then "
                                             "its closing tag is forced and the reply generated with "
                                             "--max-new-tokens (counted as thinking_forced; unset: one budget for "
                                             "both). attack matcha: no tag is forced, one generation of N + "
                                             "--max-new-tokens tokens, a trace that never closes counted as "
                                             "truncated (unset: 4096 through the chat template). robustness, "
                                             "attack wordimportance (--chat): the same, the trace before the label "
                                             "(unset: 2048; a trace not closed by then gives no label)")

    def __post_init__(self) -> None:
        try:
            parse_tags(self.think_tags)
        except ValueError as exc:
            raise ConfigError(self, "think_tags", str(exc)) from None
        check_at_least(self, "max_thinking_tokens", 1)
        if self.max_thinking_tokens is not None and self.reasoning in ("none", "harmony"):
            raise ConfigError(self, "max_thinking_tokens", f"forces a closing think tag; {{reasoning={self.reasoning}}} "
                              "has none")
        if self.think_tags is not None and self.reasoning not in (None, "auto", "think-tags"):
            raise ConfigError(self, "think_tags", f"tags are for {{reasoning=think-tags}}, not {self.reasoning}")

    def resolve(self, backend: Any) -> ReasoningFormat:
        """The format: the one asked for, or (auto) the one ``backend``'s chat template announces (its plain
        ``chat_template`` value: a Ray driver's stand-in has it without loading the model)."""
        own = getattr(backend, "__dict__", {})
        template = own["chat_template"] if "chat_template" in own else getattr(
            getattr(backend, "tokenizer", None), "chat_template", None)
        return resolve_format(self.reasoning or "auto", template if isinstance(template, str) else None,
                              self.think_tags)


def opens_thinking(backend: Any, messages: Any, fmt: ReasoningFormat) -> bool:
    """Whether a chat prompt ends inside an open trace (R1-distill's generation prompt writes ``<think>``): its
    completion then starts in the thinking. Only backends that render templates here (hf) can tell."""
    render = getattr(backend, "chat_text", None)
    if not (messages and fmt.kind == "think-tags" and callable(render)):
        return False
    return str(render(messages)).rstrip().endswith(fmt.open_tag)


def closing_prefix(fmt: ReasoningFormat, prompt_opens: bool) -> str:
    """What closes a thinking model's trace before a scored answer (log-prob paths): the closing tag where the
    generation prompt opened the block (R1-distill), an empty block where the model would open it (Qwen3's
    ``enable_thinking`` off writes the same), nothing for a model without thinking. Scoring ``prefix + "1"``
    against ``prefix + "0"`` compares the two answers after the closed trace (the shared prefix cancels)."""
    if fmt.kind != "think-tags":
        return ""
    if prompt_opens:
        return f"\n{fmt.close_tag}\n\n"
    return f"{fmt.open_tag}\n\n{fmt.close_tag}\n\n"


def chat_prompt_opens(backend: Any, fmt: ReasoningFormat) -> bool:
    """Whether ``backend``'s chat template opens the trace in its generation prompt (the same for every turn)."""
    return opens_thinking(backend, ({"role": "user", "content": "?"},), fmt)


def summary_format(fmt: ReasoningFormat, records: Any) -> dict[str, Any]:
    """What a summary says of the format: the resolved one for a thinking model, "returned apart" when an API gave
    the traces apart ("hidden" when it only counted them), nothing for a model without thinking (its summary stays
    as it was)."""
    if fmt.thinks:
        return {"reasoning_format": fmt.record()}
    rows = list(records)
    if any(r.get("thinking") for r in rows):
        return {"reasoning_format": {"kind": "returned apart (reasoning_content)"}}
    if any(r.get("thinking") is not None for r in rows):
        return {"reasoning_format": {"kind": "hidden by the API (reasoning_tokens only)"}}
    return {}


def no_reply_summary(records: Any, *, field: str = "no_answer", name: str = "no_reply") -> dict[str, Any]:
    """``{name: ...}`` (count, share of ``records``, 95% interval, and by reason) when some record's reply was
    empty (its ``field`` holds :func:`no_answer_reason`'s empty-reply reason): those are wrong answers, counted
    apart, never silently graded."""
    from robusteval.metrics.stats import proportion

    rows = list(records)
    reasons = Counter(str(r[field]) for r in rows if r.get(field) in (NO_REPLY, NO_REPLY_AT_LIMIT))
    if not reasons:
        return {}
    count = sum(reasons.values())
    return {name: {"count": count, **proportion(count, len(rows)), "reasons": dict(reasons.most_common())}}


def truncation_summary(records: Any) -> dict[str, Any]:
    """``thinking_truncated`` (count, share of ``records``, 95% interval) when the records hold traces."""
    from robusteval.metrics.stats import proportion

    rows = list(records)
    if not any("thinking" in r for r in rows):
        return {}
    truncated = sum(1 for r in rows if r.get("thinking_truncated"))
    out = {"thinking_truncated": {"count": truncated, **proportion(truncated, len(rows))}}
    if any("thinking_forced" in r for r in rows):  # budget forcing: how often the closing tag was forced
        forced = sum(1 for r in rows if r.get("thinking_forced"))
        out["thinking_forced"] = {"count": forced, **proportion(forced, len(rows))}
    return out


#: Every setting of the :class:`ReasoningOptions` block, in declaration order.
REASONING_KEYS = ("reasoning", "think_tags", "max_thinking_tokens")


def reasoning_block(*keys: str) -> Any:
    """The ``thinking`` field of a method's config that reads only some of :class:`ReasoningOptions`' settings
    (``robustness`` and the word-importance attack: ``max_thinking_tokens``); see
    :func:`robusteval.models.generation.generation_block`."""
    return shared_block(ReasoningOptions, REASONING_KEYS, keys)


class ThinkingFields:
    """Read access to a config's ``thinking`` block under the flat name (``config.max_thinking_tokens``)."""

    thinking: ReasoningOptions

    @property
    def max_thinking_tokens(self) -> int | None:
        return self.thinking.max_thinking_tokens
