"""What an attack is to the rest of robusteval, and the attack registry.

An attack is one package (``attacks/<name>/``) with a config dataclass and a pipeline, registered with
``@register_attack``. The CLI builds ``robusteval attack <name>`` from the registration: flags from the config
fields, the dataset choices, the run lifecycle, the summary table. Nothing else needs to change to add one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from robusteval.data.example import Example
from robusteval.models import Backend
from robusteval.registry import Registry
from robusteval.store import RunStore


@runtime_checkable
class Attack(Protocol):
    """The small protocol every registered attack implements (instances are stateless)."""

    #: The run config: a frozen dataclass of ``robusteval.config.option`` fields, with a nested ``data``.
    config_type: ClassVar[type[Any]]
    #: Which dataset formats it reads: "qa" (questions with gold answers) or "label" (classification).
    data_kind: ClassVar[str]
    #: Example of a complete command line, for ``--help``.
    example: ClassVar[str]

    def identity(self, config: Any, model: dict[str, Any] | None, examples: Sequence[Example]) -> dict[str, Any]:
        """The run identity (``robusteval.lifecycle.run_identity``), checked before the model loads."""
        ...

    def run(self, config: Any, backend: Backend, store: RunStore | str | os.PathLike[str], *,
            load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> Mapping[str, Any]:
        """Attack every example, store every unit, write and return the summary."""
        ...

    def summarise(self, store: RunStore) -> Mapping[str, Any]:
        """The summary of a (finished or partial) run, from its stored records alone."""
        ...

    def table(self, summary: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]], list[str]]:
        """(title, rows, columns) of the terminal table."""
        ...


ATTACKS: Registry[Attack] = Registry(
    "attack", modules=("robusteval.attacks.matcha.attack", "robusteval.attacks.wordimportance.attack"),
)

A = TypeVar("A", bound=type)


def register_attack(name: str, *, summary: str, extra: str | None = None) -> Callable[[A], A]:
    """Class decorator: ``@register_attack("matcha", summary="…")`` registers an instance of the class."""

    def wrap(cls: A) -> A:
        ATTACKS.register(name, summary=summary, extra=extra)(cls())
        return cls

    return wrap


def get_attack(name: str) -> Attack:
    return ATTACKS.get(name).value


def attack_names() -> list[str]:
    return ATTACKS.names()


def describe_attacks() -> Mapping[str, str]:
    return {entry.name: entry.summary for entry in ATTACKS.entries()}
