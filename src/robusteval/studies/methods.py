"""The methods a study can run in a cell: each one the same config and pipeline function its CLI command uses.

A :class:`Method` says which config dataclass its options fill, which datasets it reads (``qa``: questions with
gold answers; ``label``: classification; ``instances``: VAR-MATH instance files), how its run identity is made
(before any model loads) and which pipeline runs it. ``eval``, ``robustness`` and ``variants`` are listed here;
every registered attack is one through :data:`robusteval.attacks.base.ATTACKS`, and every registered method with a
runner (:mod:`robusteval.methods`).
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

    def examples(self, config: Any) -> list[Any]:
        """What the cell reads, loaded and checked now (a bad file fails before any model loads)."""
        if self.data_kind == "instances":
            return list(config.load_instances())
        return list(config.data.load())

    def info(self, config: Any, batch_size: int) -> dict[str, Any]:
        """What the run records beside its identity (as the method's command records it)."""
        if self.run_info is not None:
            return self.run_info(config, batch_size)
        if self.name == "robustness":
            from robusteval.evals.robustness import robustness_info

            return robustness_info(config, batch_size)
        limit = config.limit if self.data_kind == "instances" else config.data.limit
        return {"limit": limit, "batch_size": batch_size}


def _eval() -> Method:
    from robusteval.evals.answer_first import EvalConfig, eval_identity, evaluate

    return Method("eval", EvalConfig, "qa", eval_identity,
                  lambda c, b, s, load, bs: evaluate(c, b, s, batch_size=bs), (("acc", "higher"),))


def _robustness() -> Method:
    from robusteval.evals.robustness import RobustnessConfig, robustness, robustness_identity

    return Method("robustness", RobustnessConfig, "label", robustness_identity,
                  lambda c, b, s, load, bs: robustness(c, b, s, load_model=load, batch_size=bs),
                  (("rb_index", "lower"), ("acc[original]", "higher")))


def _variants() -> Method:
    from robusteval.variants.configs import VariantsEvalConfig
    from robusteval.variants.pipeline import evaluate_variants, variants_eval_identity

    return Method("variants", VariantsEvalConfig, "instances", lambda c, model, _: variants_eval_identity(c, model),
                  lambda c, b, s, load, bs: evaluate_variants(c, b, s, batch_size=bs),
                  (("strict", "higher"), ("loose", "higher")))


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


_BUILTIN = {"eval": _eval, "robustness": _robustness, "variants": _variants}


def method_names() -> list[str]:
    from robusteval.attacks.base import attack_names

    registered = [spec.name for spec in methods() if spec.runner is not None]
    return list(dict.fromkeys([*registered, *_BUILTIN, *attack_names()]))


def get_method(name: str) -> Method | None:
    """The method ``name`` (None when there is none by that name): a registered method's runner first."""
    from robusteval.attacks.base import attack_names

    spec = method_named(name)
    if spec is not None and spec.runner is not None:
        method: Method = spec.load_runner()
        return replace(method, headlines=spec.headlines) if spec.headlines else method
    if name in _BUILTIN:
        return _BUILTIN[name]()
    if name in attack_names():
        return attack_method(name)
    return None


def dataset_choices(data_kind: str) -> list[str]:
    """The dataset formats a method of ``data_kind`` reads (the choices its command's --dataset offers)."""
    from robusteval.data.spec import answer_first_datasets, classification_datasets

    return answer_first_datasets() if data_kind == "qa" else classification_datasets()
