"""Each example's outcome under each prompt, kept in a run's summary so two models' runs can be paired example by
example (the study leaderboard's and ``runs compare``'s McNemar and paired bootstrap tests).

``{"ids": [example id, ...], "correct": {prompt name: "1011..."}}``: one character per example, in the order of
``ids`` ("1": the prompt's label was right), so a summary of thousands of examples and a dozen prompts stays small.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The summary key holding them.
KEY = "per_example"


def encode(ids: Sequence[str], correct: Mapping[str, Sequence[bool]]) -> dict[str, Any]:
    """The summary block of ``correct`` (prompt name -> right or not per example, in the order of ``ids``)."""
    for name, values in correct.items():
        if len(values) != len(ids):
            raise ValueError(f"prompt {name}: {len(values)} outcomes for {len(ids)} examples")
    return {"ids": [str(i) for i in ids],
            "correct": {name: "".join("1" if value else "0" for value in values) for name, values in correct.items()}}


def decode(summary: Mapping[str, Any]) -> dict[str, dict[str, bool]] | None:
    """Prompt name -> example id -> right or not, from a summary; None where it keeps none (a run made before they
    were kept, or a malformed block)."""
    block = summary.get(KEY)
    if not isinstance(block, Mapping):
        return None
    ids, correct = block.get("ids"), block.get("correct")
    if not isinstance(ids, list) or not isinstance(correct, Mapping):
        return None
    out: dict[str, dict[str, bool]] = {}
    for name, text in correct.items():
        if not isinstance(text, str) or len(text) != len(ids) or set(text) - {"0", "1"}:
            return None
        out[str(name)] = {str(i): flag == "1" for i, flag in zip(ids, text, strict=True)}
    return out
