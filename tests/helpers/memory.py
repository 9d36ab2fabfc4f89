"""The largest tensor a block of code allocates, seen at the aten level (``tracemalloc`` does not see torch).

Every op's outputs are recorded by the bytes of their storage (a view of a big tensor counts as that tensor,
an ``expand`` of a small one as the small one), so a [B, 1, Q, K] attention mask shows up however it is built;
backward passes are recorded too (the autograd engine carries the mode into its thread-local state). Kernels'
private scratch buffers are not tensors and are not seen.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class LargestAllocation(TorchDispatchMode):
    """``with LargestAllocation() as seen: ...``; then ``seen.bytes`` and ``seen.op`` (op, shape, dtype).

    ``along``: count only tensors with a dimension of at least this many elements, i.e. those spanning a long
    sequence (other models a run loads, such as the drift meter's sentence encoder, truncate their inputs)."""

    def __init__(self, along: int = 0) -> None:
        super().__init__()
        self.along = along
        self.bytes = 0
        self.op = ""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if (isinstance(tensor, torch.Tensor) and tensor.device.type != "meta"
                    and max(tensor.shape, default=0) >= self.along):
                size = tensor.untyped_storage().nbytes()
                if size > self.bytes:
                    self.bytes, self.op = size, f"{func} {tuple(tensor.shape)} {tensor.dtype}"
        return out


def kv_cache_bytes(model: Any, tokens: int) -> int:
    """Bytes of the KV cache of ``tokens`` tokens: keys and values of every layer's KV heads."""
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim
    return per_token * tokens * next(model.parameters()).element_size()


#: An answer-first block repeated to make a long question the tiny trained Llama still answers in the format
#: ("The answer is N. ...": reasoning after the answer, so MATCHA has something to attack).
FILLER = ("A: The answer is 7. 4 + 3 = 7.\n\nQ: Mia has 4 red pencils and 3 blue pencils. How many pencils does "
          "she have in all?\n")
QUESTION = "Mia has 4 red pencils and 3 blue pencils. How many pencils does she have in all?"


def long_question(encode: Any, tokens: int) -> str:
    """A math question of at least ``tokens`` tokens (``encode``: text -> ids), ending in :data:`QUESTION`."""
    per_block = len(encode(FILLER))
    return FILLER * (tokens // per_block + 1) + QUESTION


def long_math_rows(encode: Any, within: int, beyond: int) -> list[dict[str, str]]:
    """Five math examples: three short ones, ``long`` (about ``within`` tokens) and ``too-long`` (``beyond``)
    between them, so the examples after the refused one show that the run goes on."""
    return [
        {"id": "short-1", "question": "Tom read 6 pages on Monday and 5 pages on Tuesday. How many pages did he read?",
         "answer": "11"},
        {"id": "too-long", "question": long_question(encode, beyond), "answer": "7"},
        {"id": "long", "question": long_question(encode, within), "answer": "7"},
        {"id": "short-2", "question": QUESTION, "answer": "7"},
        {"id": "short-3", "question": "There are 12 frogs on a log. 5 frogs jump into the water. How many frogs are "
         "still on the log?", "answer": "7"},
    ]
