"""MATCHA on a thinking target: what is read, what is attacked, what is judged.

A reasoning model's completion is ``[trace] </think> [answer sentence] [chain]`` (R1-distill's chat prompt opens the
trace itself). MATCHA reads the **answer from the reply only** (never the trace: a trace states and revises
answers), and the reasoning it attacks and judges is ``--reasoning-source``:

* ``chain`` (the default): the reasoning after the answer in the reply, the paper's quantity (the reasoning a model
  gives with its answer), so a thinking target's rates compare with every other model's; traces also hold
  deliberate wrong attempts ("The answer is 5. Hmm, no"), which a judge would find wrong before any attack.
* ``trace``: the thinking trace (its tags left out of the CoT loss, so the attack does not push the model off
  closing it); the judge reads the trace.
* ``both``: trace and chain: the CoT loss over both, the judge reads the trace then the reply.

The trace is teacher-forced either way: the answer comes after it. A trace never closed has no answer:
``no answer (thinking truncated)``, never graded on a fragment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.text.thinking import ReasoningFormat, Split

REASONING_SOURCES = ("trace", "chain", "both")
DEFAULT_REASONING_SOURCE = "chain"
#: Why a thinking target's example with no trace to attack is skipped (``--reasoning-source trace``).
NO_TRACE = "no thinking trace"


def prompt_opens(decode: Callable[[list[int]], str], tail_ids: Sequence[int], fmt: ReasoningFormat) -> bool:
    """Whether the prompt's last tokens open the trace (R1-distill's generation prompt ends in ``<think>``)."""
    return fmt.kind == "think-tags" and decode(list(tail_ids)).rstrip().endswith(fmt.open_tag)


def judged_text(split: Split, source: str) -> str:
    """What the reasoning judge reads of a thinking target's completion: the reply (``chain``: the answer sentence
    and the chain after it, as a completion of a model without thinking), the trace, or the trace then the reply."""
    trace = (split.thinking or "").strip()
    if source == "trace":
        return trace
    if source == "both" and trace:
        return f"{trace}\n\n{split.reply}"
    return split.reply


@dataclass(frozen=True)
class ContinuationSpans:
    """Token spans of a thinking target's clean continuation: the trace's text (tags excluded), where the reply
    starts (after the closing tag), and the answer sentence's length from there."""

    trace: tuple[int, int]
    reply_start: int
    n_answer: int
    length: int

    def cot_spans(self, source: str) -> list[tuple[int, int]]:
        """The continuation positions the CoT loss covers for ``source`` (empty spans dropped)."""
        chain = (self.reply_start + self.n_answer, self.length)
        spans = {"trace": [self.trace], "chain": [chain], "both": [self.trace, chain]}[source]
        return [(a, b) for a, b in spans if b > a]

    def record(self) -> dict[str, Any]:
        return {"trace_span": list(self.trace), "reply_start": self.reply_start}


def _first(n: int, ok: Callable[[int], bool]) -> int:
    """The smallest k in [0, n] with ``ok(k)`` (``ok`` monotone: False then True), n when none."""
    low, high = 0, n
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return low


def continuation_spans(
    decode: Callable[[list[int]], str],
    ids: Sequence[int],
    fmt: ReasoningFormat,
    opened: bool,
    answer_sentence: str,
) -> ContinuationSpans:
    """Where the trace, the closing tag and the answer lie in a closed-trace continuation ``ids`` (binary searches
    over decoded prefixes: a few decodes, not one per token, for traces of thousands of tokens)."""
    ids = list(ids)
    n = len(ids)
    text = decode(ids)
    open_at = -1 if opened else text.find(fmt.open_tag)
    body = open_at + len(fmt.open_tag) if open_at >= 0 else 0
    close_at = text.find(fmt.close_tag, body)
    if close_at < 0:
        raise ValueError("the trace is not closed: a truncated trace has no reply to attack")
    start = _first(n, lambda k: len(decode(ids[:k])) >= body) if body else 0
    # The last token wholly before the closing tag ends the trace's text.
    end = max(start, _first(n, lambda k: len(decode(ids[: k + 1])) > close_at) if close_at else 0)
    reply_start = _first(n, lambda k: fmt.close_tag in decode(ids[:k]))
    sentence = answer_sentence.strip()
    n_answer = 0
    if sentence:
        n_answer = _first(n - reply_start, lambda k: sentence in decode(ids[reply_start : reply_start + k]))
    return ContinuationSpans((start, end), reply_start, n_answer, n)
