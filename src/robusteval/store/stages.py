"""Stages (the named kinds of unit in a run store) that computes also read and write as caches.

A judge's verdicts and a classifier's answers are asked for from inside other stages' computes and cached in
the run store. A distributed executor sends a snapshot of these cache stages with every compute (see
:mod:`robusteval.executors.transport`), so it must know their names, but an executor knows nothing of judges
or evaluations: the modules that own such a stage register it here, next to the constant that names it::

    STAGE = register_stage("classify", cache=True, summary="classifier answers")

The registry imports its module list when first read (a process that ships computes, before it has imported
them itself), like every other registry; a new cache stage adds its module there.
"""

from __future__ import annotations

from robusteval.registry import Registry

#: The modules that register a stage (imported when :data:`STAGES` is first read).
_STAGE_MODULES = ("robusteval.judges.base", "robusteval.evals.classification", "robusteval.perturbations.dataset")
#: Stage name -> itself, every stage a run store may hold (``Run.records`` tells a misspelt name from a stage a
#: run has no unit of yet); ``meta["cache"]``: computes read and write it as a cache.
def _stage_modules() -> list[str]:
    """The listed modules, then each registered method's (``MethodSpec.stages``)."""
    from robusteval.methods import methods

    return list(dict.fromkeys([*_STAGE_MODULES, *(module for spec in methods() for module in spec.stages)]))


STAGES: Registry[str] = Registry("stage", modules=_stage_modules)


def register_stage(name: str, *, cache: bool = False, summary: str = "") -> str:
    """Register the stage ``name`` (``cache``: read and written by computes of other stages); returns it."""
    return STAGES.register(name, summary=summary, cache=cache)(name)


def cache_stages() -> tuple[str, ...]:
    """The registered cache stages, sorted."""
    return tuple(sorted(entry.name for entry in STAGES if entry.meta.get("cache")))
