"""Tokenising a prompt made of segments: ONE tokenisation of the whole text, split at the segment boundaries.

Encoding segments separately is wrong for tokenizers that prepend a space marker to every encoded string
(SentencePiece with ``Prepend("▁")``, as Llama-2 and Mistral-7B-v0.1 ship it): "Q:" + " Tom" becomes
``▁Q : ▁▁Tom`` where the whole prompt gives ``Q : ▁Tom``. Splitting one tokenisation by character offsets
keeps the concatenation of the parts exactly equal to the whole prompt's ids, for every tokenizer family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robusteval.errors import UserError


def tokenize_with_offsets(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and character offsets of ``text`` (no special tokens added: BOS is the caller's, chat templates
    write theirs in the text)."""
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except NotImplementedError:
        raise UserError("this needs a fast (Rust) tokenizer with character offsets; the model's tokenizer is a "
                        "slow Python one: save it with a tokenizer.json") from None
    return list(encoded["input_ids"]), [(int(a), int(b)) for a, b in encoded["offset_mapping"]]


def split_by_offsets(ids: Sequence[int], offsets: Sequence[tuple[int, int]], bounds: Sequence[int],
                     sticky: int | None = None) -> list[list[int]]:
    """Split ``ids`` into ``len(bounds) + 1`` contiguous parts at the character positions ``bounds``.

    A token goes to the part its start falls in; a token that overlaps part ``sticky`` (the editable one)
    goes there (``▁Tom`` carries the space before "Tom"). Parts never go backwards, so their concatenation is
    ``ids``."""
    edges = [0, *bounds]
    parts: list[list[int]] = [[] for _ in range(len(bounds) + 1)]
    current = 0
    for token, (start, end) in zip(ids, offsets, strict=True):
        index = sum(1 for edge in edges[1:] if start >= edge)
        if sticky is not None and end > start and start < _end(edges, sticky, len(parts)) and end > edges[sticky]:
            index = sticky
        current = max(current, index)  # byte-fallback pieces can have odd offsets; stay contiguous
        parts[current].append(int(token))
    return parts


def _end(edges: Sequence[int], index: int, n_parts: int) -> int:
    return edges[index + 1] if index + 1 < len(edges) else 1 << 62
