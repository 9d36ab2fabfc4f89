"""The ``first-word`` method: its config, identity and pipeline (one stored, resumable unit per question)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.config import nested, option, validated
from robusteval.data.example import Example
from robusteval.data.spec import DataSpec
from robusteval.lifecycle import finish, run_identity, store_for
from robusteval.metrics.stats import wilson_interval
from robusteval.models.base import Backend, GenerationRequest
from robusteval.models.identity import backend_identity
from robusteval.runner import run_units
from robusteval.store.sqlite import unit_key
from robusteval.store.stages import register_stage
from robusteval.studies.methods import Method

COMMAND = "first-word"
STAGE = register_stage("first-word", summary="first-word answers")


@validated
@dataclass(frozen=True)
class FirstWordConfig:
    """``robusteval first-word``: is the first word of the model's reply the gold label?"""

    data: DataSpec = nested()
    max_new_tokens: int = option(4, help="generation budget per answer")


def identity(config: FirstWordConfig, model: dict[str, Any] | None, examples: Sequence[Example]) -> dict[str, Any]:
    return run_identity(COMMAND, config, model)


def first_word(text: str) -> str:
    words = text.strip().split()
    return words[0].strip(".,!?").lower() if words else ""


def run(config: FirstWordConfig, backend: Backend, store: Any, *, batch_size: int = 8) -> Mapping[str, Any]:
    examples = config.data.load()
    with store_for(store, identity(config, backend_identity(backend), examples),
                   {"limit": config.data.limit, "batch_size": batch_size}) as opened:
        def compute(batch: list[Example]) -> list[dict[str, Any]]:
            replies = backend.generate([GenerationRequest(f"Question: {e.question}\nAnswer:",
                                                          max_new_tokens=config.max_new_tokens) for e in batch])
            return [{"id": e.id, "reply": r.text, "correct": first_word(r.text) == e.answer.strip().lower()}
                    for e, r in zip(batch, replies, strict=True)]

        records = run_units(opened, STAGE, examples, lambda e: unit_key(e.id, e.question), compute,
                            id_of=lambda e: e.id, batch_size=batch_size)
        n, right = len(records), sum(bool(r["correct"]) for r in records)
        return finish(opened, {"model": backend.name, "dataset": config.data.dataset, "n": n, "n_correct": right,
                               "acc": right / n if n else None,
                               "acc_ci95": list(wilson_interval(right, n)) if n else None})


def runner() -> Method:
    def run_cell(config: Any, backend: Any, store: Any, load: Callable[[str], Any], batch_size: int
                 ) -> Mapping[str, Any]:
        return run(config, backend, store, batch_size=batch_size)

    return Method("first-word", FirstWordConfig, "label", identity, run_cell, (("acc", "higher"),))
