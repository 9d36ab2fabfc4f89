"""The adversarial prompt search: robusteval's word-importance search (:mod:`robusteval.attacks.wordimportance`)
run over the instruction's words, its objective the accuracy on a seeded sample of the data (the search set).

The search is ``attack_example`` unchanged, on one "example" whose text is the instruction; its oracle's
classifier is :class:`PromptSetClassifier`, which answers a candidate instruction with the accuracy of the prompt
it makes on the search set (hard labels) or the mean probability of the true labels (soft labels, the model's
label log-probs), as the confidence the search lowers. The search stops when the accuracy on the search set
reaches 0 (the "flip"), when the perturbed-word rate would pass ``max_rate`` or when the budget is spent.

A query is one model call on one example with one candidate prompt: a candidate costs ``len(search set)``
queries, so the oracle's budget is ``budget // len(search set)`` candidates and ``queries`` (= candidates asked x
search-set size) never exceeds ``budget``. Word ranking (deleting each word) is the first part of the spend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from robusteval.analysis.drift import DriftMeter
from robusteval.data.example import Example
from robusteval.evals.classification import LabelClassifier, example_fields, predicted_label
from robusteval.evals.prompt_robustness.surfaces import PromptSurfaces, variant_template
from robusteval.perturbations.similarity import SimilarityGate
from robusteval.seeding import derive_random
from robusteval.store.stages import register_stage

SEARCH_STAGE = register_stage("prompt_search", summary="adversarial instruction found by the word-importance search")
#: The pseudo-labels of the search's oracle: the prompt still answers some of the search set right, or none.
INTACT, BROKEN = "intact", "broken"


def split_examples(n: int, search_size: int, seed: int) -> tuple[list[int], list[int]]:
    """(search set, held-out set) as example indices: a seeded shuffle cut after ``search_size``; disjoint, both
    in data order."""
    order = list(range(n))
    derive_random(seed, "prompt-search-split").shuffle(order)
    return sorted(order[:search_size]), sorted(order[search_size:])


@dataclass(eq=False)
class PromptSetClassifier(LabelClassifier):
    """A "classifier" of instructions for the word-importance oracle: each item's ``text`` is a candidate
    instruction; its record's ``probs[INTACT]`` is the objective on the search set, its label BROKEN when no
    example of the set is answered right. Every candidate's answers are the classify stage's units (resumable)."""

    surfaces: PromptSurfaces | None = None
    examples: Sequence[Example] = ()
    label_mode: str = "hard"
    #: Candidate instruction -> per-example records, in the order asked (for the summary).
    asked: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def classifier_for(self, instruction: str) -> LabelClassifier:
        if self.surfaces is None:
            raise ValueError("PromptSetClassifier needs the prompt's surfaces")
        variant = self.surfaces.rebuild("instruction", {"instruction": instruction})
        return LabelClassifier(self.backend, variant_template(self.template, variant), self.store,
                               soft=self.label_mode == "soft", chat=self.chat, system_prompt=self.system_prompt,
                               thinking_budget=self.thinking_budget)

    def classify(self, items: Sequence[Mapping[str, str]], *, example_ids: Sequence[str] | None = None
                 ) -> list[dict[str, Any]]:
        fields = [example_fields(example) for example in self.examples]
        ids = [example.id for example in self.examples]
        out = []
        for item in items:
            instruction = item["text"]
            records = self.classifier_for(instruction).classify(fields, example_ids=ids)
            self.asked[instruction] = records
            out.append(objective_record(records, self.examples, self.label_mode))
        return out


def objective_record(records: Sequence[Mapping[str, Any]], examples: Sequence[Example], mode: str
                     ) -> dict[str, Any]:
    """The oracle's view of one prompt on the search set: the accuracy, and the objective as ``probs[INTACT]``
    (hard: the accuracy; soft: the mean probability of the true labels)."""
    correct = [predicted_label(r, mode) == ex.answer for r, ex in zip(records, examples, strict=True)]
    accuracy = sum(correct) / len(correct)
    objective = (accuracy if mode == "hard" else
                 sum(float((r.get("probs") or {}).get(ex.answer, 0.0)) for r, ex in zip(records, examples,
                                                                                         strict=True)) / len(records))
    return {"label": INTACT if any(correct) else BROKEN, "probs": {INTACT: objective}, "accuracy": accuracy}


class SimilarityDrift(DriftMeter):
    """``--min-similarity`` as the search's drift bound: drift = 1 - the gate's similarity of the whole
    instruction to the clean one, bounded by 1 - min_similarity (candidates below it are never queried)."""

    def __init__(self, gate: SimilarityGate) -> None:  # no DriftMeter state: every method is overridden
        self.gate = gate

    def drifts(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        return [1.0 - value for value in self.gate.scores(list(originals), list(perturbed))]

    def measure(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[dict[str, Any]]:
        return [{"similarity": value, "measure": self.gate.measure}
                for value in self.gate.scores(list(originals), list(perturbed))]
