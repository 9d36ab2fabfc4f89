"""k perturbed copies of one surface of the prompt per method, each a stored unit (stage ``perturbed_prompt``).

Each copy j of a method perturbs every piece of the surface (the instruction, the format line, each exemplar's
fields, the system turn) with the random stream of (seed, method, copy j, piece), so a copy depends on neither the
other methods nor k, and a rerun reads it back instead of perturbing again (a back-translation asks its translator
once). The store's identity fixes the seed, the template, the target and the perturbation settings; a unit's key
is the method, the language, the copy and the pieces' text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.data.example import Example
from robusteval.evals.prompt_robustness.surfaces import PromptSurfaces, PromptVariant
from robusteval.models import Backend
from robusteval.perturbations.base import Language, Protection
from robusteval.perturbations.registry import MethodOptions
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.store import RunStore, unit_key
from robusteval.store.stages import register_stage

PROMPT_STAGE = register_stage("perturbed_prompt", summary="perturbed copies of a prompt's surface")


def prompt_name(method: str, index: int) -> str:
    """``C-swap#1``: the name of a method's (index + 1)-th perturbed prompt in the summary and tables."""
    return f"{method}#{index + 1}"


@dataclass(frozen=True)
class PerturbedPrompt:
    name: str
    method: str
    index: int
    #: piece id -> {"original", "text", "edits", ...} (the perturbation's record of what changed)
    pieces: dict[str, dict[str, Any]]
    variant: PromptVariant

    @property
    def changed(self) -> bool:
        return any(piece["text"] != piece["original"] for piece in self.pieces.values())


def perturbed_prompts(store: RunStore, surfaces: PromptSurfaces, target: str, methods: Sequence[str], k: int, *,
                      language: Language, spec: PerturbationSpec, protect: Protection, seed: int,
                      load_model: Callable[[str], Backend] | None = None, device: str = "auto"
                      ) -> list[PerturbedPrompt]:
    """The k perturbed prompts of every method, in the order of ``methods`` then copy."""
    pieces = surfaces.pieces(target)
    options: MethodOptions | None = None
    out: list[PerturbedPrompt] = []
    for method in methods:
        options = options or spec.method_options(load_model, device=device)
        for record in _perturb_method(store, method, pieces, k, target=target, language=language, spec=spec,
                                      options=options, protect=protect, seed=seed):
            texts = {piece: block["text"] for piece, block in record["pieces"].items()}
            out.append(PerturbedPrompt(prompt_name(method, record["index"]), method, record["index"],
                                       record["pieces"], surfaces.rebuild(target, texts)))
    return out


def _perturb_method(store: RunStore, method: str, pieces: Mapping[str, str], k: int, *, target: str,
                    language: Language, spec: PerturbationSpec, options: MethodOptions, protect: Protection,
                    seed: int) -> list[dict[str, Any]]:
    from robusteval.perturbations import build_perturbation
    from robusteval.perturbations.dataset import perturb_examples
    from robusteval.runner import run_units

    perturbation = build_perturbation(method, language, options)
    budget = spec.budget(perturbation)

    def compute(batch: list[int]) -> list[dict[str, Any]]:
        # One text per (copy, piece); the id gives each its own random stream (dataset.field_rng).
        examples = [Example(f"prompt{j}/{piece}", text, "", "text") for j in batch for piece, text in pieces.items()]
        results = perturb_examples(examples, perturbation, fields=["text"], seed=seed, budget=budget, protect=protect)
        records = []
        for j in batch:
            done = {piece: results.pop(0).results.get("text") for piece in pieces}
            records.append({"method": method, "index": j, "target": target, "pieces": {
                piece: ({"original": pieces[piece], "text": result.text, **result.to_dict()} if result is not None
                        else {"original": pieces[piece], "text": pieces[piece], "method": method, "edits": []})
                for piece, result in done.items()}})
        return records

    return run_units(store, PROMPT_STAGE, list(range(k)),
                     key_of=lambda j: unit_key(PROMPT_STAGE, method, language, target, j, dict(pieces)),
                     compute=compute, batch_size=k, description=f"perturb prompt {method}")
