"""Perturbed copies of whole datasets: same ids and labels, changed text fields, a record of every edit.

Randomness is seeded per (seed, method, example id, field), so a copy does not depend on order, limit or
batching, and the same command always writes the same file.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.data.example import Example, example_fields, with_fields
from robusteval.perturbations.base import (
    DEFAULT_PROTECTION,
    ChangeBudget,
    Perturbation,
    Perturbed,
    Protection,
)
from robusteval.seeding import derive_random
from robusteval.store import RunStore
from robusteval.store.stages import register_stage


@dataclass(frozen=True)
class PerturbedExample:
    example: Example  # the perturbed example (original id, label and meta)
    original: Example
    results: dict[str, Perturbed]  # field -> what changed

    @property
    def changed(self) -> bool:
        return any(result.changed for result in self.results.values())

    def to_record(self, *, seed: int, budget: ChangeBudget | None) -> dict[str, Any]:
        record = self.example.to_dict()
        record["perturbation"] = {
            "method": next(iter(self.results.values())).method if self.results else None,
            "seed": seed,
            "rate": budget.rate if budget else None,
            "changed": self.changed,
            "fields": {
                name: {"original": result.original, **result.to_dict()} for name, result in self.results.items()
            },
        }
        return record


def field_rng(seed: int, method: str, example_id: str, field: str) -> random.Random:
    """The random stream of one field of one example."""
    return derive_random(seed, "perturb", method, example_id, field)


def perturb_examples(
    examples: Sequence[Example],
    perturbation: Perturbation,
    *,
    fields: Sequence[str],
    seed: int = 0,
    budget: ChangeBudget | None = None,
    protect: Protection = DEFAULT_PROTECTION,
) -> list[PerturbedExample]:
    """Perturb ``fields`` (``text``/``premise`` = the question, other names = meta keys) of every example."""
    plan: list[tuple[int, str, str]] = []  # (example index, field, text)
    for i, example in enumerate(examples):
        available = example_fields(example)
        for name in fields:
            if available.get(name):
                plan.append((i, name, available[name]))
    texts = [text for _, _, text in plan]
    rngs = [field_rng(seed, perturbation.name, examples[i].id, name) for i, name, _ in plan]
    batch = getattr(perturbation, "perturb_batch", None)
    if batch is not None:  # sentence-level methods send the whole dataset to their model at once
        results: list[Perturbed] = batch(texts, budget=budget, rngs=rngs, protect=protect)
    else:
        kwargs: dict[str, Any] = {"protect": protect}
        if budget is not None:
            kwargs["budget"] = budget
        results = [perturbation.perturb(text, rng=rng, **kwargs) for text, rng in zip(texts, rngs, strict=True)]
    by_example: dict[int, dict[str, Perturbed]] = {}
    for (i, name, _), result in zip(plan, results, strict=True):
        by_example.setdefault(i, {})[name] = result
    out = []
    for i, example in enumerate(examples):
        changed = by_example.get(i, {})
        out.append(PerturbedExample(with_fields(example, {k: v.text for k, v in changed.items()}), example, changed))
    return out




PERTURB_STAGE = register_stage("perturbed_example", summary="perturbed copies of examples")


def perturb_examples_stored(
    store: RunStore,
    examples: Sequence[Example],
    perturbation: Perturbation,
    *,
    fields: Sequence[str],
    seed: int = 0,
    budget: ChangeBudget | None = None,
    protect: Protection = DEFAULT_PROTECTION,
) -> list[dict[str, Any]]:
    """:func:`perturb_examples` with every perturbed example committed as a unit of ``store`` (resumable).

    The store's identity must fix the settings (seed, budget, fields, protection); the key is the method, the
    language and the example. Sentence-level methods commit in smaller batches: each batch is a model call.
    """
    from robusteval.runner import run_units
    from robusteval.store import unit_key

    def compute(batch: list[Example]) -> list[dict[str, Any]]:
        results = perturb_examples(batch, perturbation, fields=fields, seed=seed, budget=budget, protect=protect)
        return [r.to_record(seed=seed, budget=budget) for r in results]

    return run_units(
        store, PERTURB_STAGE, examples,
        key_of=lambda ex: unit_key(perturbation.name, perturbation.language, ex.to_dict()),
        compute=compute, id_of=lambda ex: ex.id, batch_size=32 if perturbation.level == "sentence" else 256,
        description=f"perturb {perturbation.name}",
    )


def example_from_record(record: dict[str, Any]) -> Example:
    """A perturbed example back from its stored record (the perturbation record goes into ``meta``)."""
    meta = {**record["meta"], "perturbation": record["perturbation"]}
    return Example(record["id"], record["question"], record["answer"], record["answer_type"], meta)
