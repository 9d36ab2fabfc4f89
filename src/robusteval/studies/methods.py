"""The methods a study can run in a cell: each one the same config and pipeline function its CLI command uses.

A :class:`Method` says which config dataclass its options fill, which datasets it reads (``qa``: questions with
gold answers; ``label``: classification; ``instances``: VAR-MATH instance files), how its run identity is made
(before any model loads) and which pipeline runs it. A registered method (:mod:`robusteval.methods`) gives its
own through its spec's ``runner``; every registered attack (``matcha``, ``wordimportance``, ...) is one through
:data:`robusteval.attacks.base.ATTACKS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from robusteval.methods import method_named, methods

#: ``run(config, backend, store, load_model, batch_size) -> summary``
RunFn = Callable[[Any, Any, Any, Callable[[str], Any], int], Mapping[str, Any]]


@dataclass(frozen=True)
class Method:
    name: str
    config_type: type
    data_kind: str  # "qa", "label" or "instances"
    identity: Callable[[Any, dict[str, Any] | None, Sequence[Any]], dict[str, Any]]
    run: RunFn
    #: Headline metrics of the study leaderboard (``report.rates`` names; ``asr[max]``: at the largest rate),
    #: each with the direction that is more robust.
    headlines: tuple[tuple[str, str], ...]
    #: ``run_info(config, batch_size)``: what the run records beside its identity, where it records more than
    #: the limit and the batch size (as the method's command records it).
    run_info: Callable[[Any, int], dict[str, Any]] | None = None
    #: Options holding comma-separated ``NAME=FILE`` entries: a study file's relative FILEs are read from its
    #: folder, like its other paths.
    named_paths: tuple[str, ...] = ()

    def examples(self, config: Any) -> list[Any]:
        """What the cell reads, loaded and checked now (a bad file fails before any model loads)."""
        if self.data_kind == "instances":
            return list(config.load_instances())
        return list(config.data.load())

    def info(self, config: Any, batch_size: int) -> dict[str, Any]:
        """What the run records beside its identity (as the method's command records it)."""
        if self.run_info is not None:
            return self.run_info(config, batch_size)
        limit = config.limit if self.data_kind == "instances" else config.data.limit
        return {"limit": limit, "batch_size": batch_size}


#: Headlines of the registered attacks not yet registered as methods (others show every rate ``report.rates``
#: gives them; a registered method's are its registration's).
ATTACK_HEADLINES: dict[str, tuple[tuple[str, str], ...]] = {}


def attack_method(name: str) -> Method:
    """The registered attack ``name`` (:data:`robusteval.attacks.base.ATTACKS`) as a study method: its config,
    data kind, identity and pipeline, as its ``attack`` command runs them."""
    from robusteval.attacks.base import get_attack

    attack = get_attack(name)
    return Method(name, attack.config_type, attack.data_kind, attack.identity,
                  lambda c, b, s, load, bs: attack.run(c, b, s, load_model=load, batch_size=bs),
                  ATTACK_HEADLINES.get(name, ()))


def method_names() -> list[str]:
    from robusteval.attacks.base import attack_names

    registered = [spec.name for spec in methods() if spec.runner is not None]
    return list(dict.fromkeys([*registered, *attack_names()]))


def get_method(name: str) -> Method | None:
    """The method ``name`` (None when there is none by that name): a registered method's runner first."""
    from robusteval.attacks.base import attack_names

    spec = method_named(name)
    if spec is not None and spec.runner is not None:
        method: Method = spec.load_runner()
        return replace(method, headlines=spec.headlines) if spec.headlines else method
    if name in attack_names():
        return attack_method(name)
    return None


def dataset_choices(data_kind: str) -> list[str]:
    """The dataset formats a method of ``data_kind`` reads (the choices its command's --dataset offers)."""
    from robusteval.data.spec import answer_first_datasets, classification_datasets

    return answer_first_datasets() if data_kind == "qa" else classification_datasets()
