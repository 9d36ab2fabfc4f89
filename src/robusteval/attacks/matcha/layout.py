"""The token layout an attack edits: [prefix | head | question | tail], from ONE tokenisation of the prompt.

The whole prompt is tokenised once and split at the segment boundaries
(:mod:`robusteval.models.tokenization`), so the four parts always concatenate to exactly the whole prompt's
ids, for every tokenizer family; only the question span is ever edited.

With a chat template the same holds for the rendered conversation: the prefix is the exemplar turns, the
head and tail are the template's markup around the final user question.

:func:`authors_pgd_layout` is the span the MATCHA authors' embedding attack perturbs (``--count authors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.errors import UserError
from robusteval.models.tokenization import split_by_offsets, tokenize_with_offsets


@dataclass(frozen=True)
class PromptLayout:
    prefix: list[int]  # BOS + exemplars: identical for every question, so its KV cache is shared
    head: list[int]  # "Q:" (or the chat template's user-turn opening)
    question: list[int]  # the only editable span
    tail: list[int]  # "\nA:" (or the end of the user turn and the assistant header)

    @property
    def ids(self) -> list[int]:
        return [*self.prefix, *self.head, *self.question, *self.tail]


def layout_from_text(backend: Any, prefix: str, head: str, question: str, tail: str, *, add_bos: bool = True
                     ) -> PromptLayout:
    """The layout of ``prefix + head + question + tail`` tokenised as one string."""
    ids, offsets = tokenize_with_offsets(backend.tokenizer, prefix + head + question + tail)
    q_start = len(prefix) + len(head)
    parts = split_by_offsets(ids, offsets, (len(prefix), q_start, q_start + len(question)), sticky=2)
    if not parts[2]:
        raise UserError(f"the question {question[:60]!r} tokenised to nothing")
    bos = list(backend.bos_ids) if add_bos else []
    return PromptLayout(bos + parts[0], parts[1], parts[2], parts[3])


def chat_layout(backend: Any, messages: Sequence[dict[str, str]], question: str) -> PromptLayout:
    """The layout of a chat conversation whose final user turn is ``question`` (rendered by the model's template);
    the prefix is the earlier turns when the template renders them as a prefix of the whole."""
    full = backend.chat_text(messages)
    prefix = backend.chat_prefix_text(messages)
    start = full.rfind(question)
    if start < 0 or start < len(prefix):
        raise UserError("the chat template changes the question's text (it cannot be located in the rendered "
                        "prompt), so its tokens cannot be edited; attack without --chat")
    end = start + len(question)
    return layout_from_text(backend, prefix, full[len(prefix):start], question, full[end:], add_bos=False)


def authors_pgd_layout(backend: Any, layout: PromptLayout, prefix: str, head: str) -> PromptLayout:
    """The layout whose editable span is what the authors' embedding attack perturbs: from the length of
    ``prefix + head`` tokenised alone (with its BOS) to the end of the prompt, so the answer trigger with it
    (``inference_emb_attack.py`` L179-182, L367). Where ``head`` ends in a space that the whole prompt merges into
    the first question token ("Q: " + "Tom" reads ``Q : ␣Tom``, "Q: " alone ``Q : ␣``), that token is left out, as
    theirs leaves it out."""
    ids, _ = tokenize_with_offsets(backend.tokenizer, prefix + head)
    start = len(backend.bos_ids) + len(ids) - len(layout.prefix) - len(layout.head)
    start = min(max(start, 0), len(layout.question))
    return PromptLayout(layout.prefix, [*layout.head, *layout.question[:start]],
                        [*layout.question[start:], *layout.tail], [])
