"""The plugin's perturbation, judge, dataset format and backend, each registered where robusteval reads its kind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from robusteval.data.example import Example
from robusteval.data.loaders.registry import register_dataset
from robusteval.judges.base import Verdict, register_judge
from robusteval.models.base import Generation, GenerationRequest
from robusteval.models.registry import register_backend
from robusteval.perturbations.base import SpanPerturbation
from robusteval.perturbations.registry import MethodOptions, register_perturbation


@dataclass
class Upper(SpanPerturbation):
    """Every letter of a chosen word upper-cased."""

    name: ClassVar[str] = "C-upper"
    level: ClassVar[Any] = "char"
    language: ClassVar[Any] = "en"

    def char_candidates(self, char: str) -> Sequence[str]:
        return [char.upper()] if char.islower() else []


@register_perturbation("C-upper", language="en", level="char", extra="", summary="a letter upper-cased (plugin)")
def _upper(options: MethodOptions) -> Upper:
    return Upper(max_candidates=options.max_candidates)


class SameLength:
    """A semantic judge: two texts are equivalent when they have the same number of words."""

    name = "same-length"
    task = "semantic"
    deterministic = True

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        return [Verdict(len(item.original.split()) == len(item.perturbed.split()), self.name, "") for item in items]


@register_judge("same-length", summary="equal word counts (plugin)")
def _same_length(task: str, atom: str, backend_loader: Any) -> SameLength:
    return SameLength()


@register_dataset("lines", "label")
def _lines(path: str, limit: int | None = None) -> list[Example]:
    """question<TAB>label per line (plugin)"""
    rows = [line.split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Example(str(i), q, a, "label") for i, (q, a) in enumerate(rows[:limit])]


class Echo:
    """Answers the same word to every request."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.name = f"echo:{word}"

    def capabilities(self) -> frozenset[str]:
        return frozenset()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [Generation(self.word, "stop", 1) for _ in requests]


@register_backend("echo", summary="answers the same word to everything (plugin)")
def _echo(spec: Any, options: Any) -> Echo:
    return Echo(spec.target)
