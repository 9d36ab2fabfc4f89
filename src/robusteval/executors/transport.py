"""Sending a ``run_units`` compute to another process, and running it there.

A compute is a closure over its pipeline's context (backend, store, judges, prompt, config, examples). It
travels pickled (cloudpickle, as Ray ships every function) with two substitutions that rebuild the context
inside the worker instead of copying it:

* a **model backend** travels as its :class:`~robusteval.models.registry.LoadRecipe` (spec, load options,
  identity): the worker loads it once per process, checks that it resolves to the same identity (weights,
  dtype, device) as the run's, and every later compute reuses it;
* the **run store** travels as a token and a snapshot of the cache stages (judge verdicts, classifier
  answers: the stages their modules registered in :mod:`robusteval.store.stages`): the worker gets a
  :class:`ScratchStore` that serves those and records every unit the compute writes, which go back with the
  batch for the driver, the only writer, to commit.

Nothing pickled is ever stored: a run store holds JSON only. :class:`WorkerModel` is the driver's stand-in
for a model the workers hold.
"""

from __future__ import annotations

import functools
import inspect
import io
import itertools
import json
import os
import sys
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from robusteval.errors import UserError
from robusteval.models.registry import LoadRecipe
from robusteval.store.sqlite import RunStore, canonical_json
from robusteval.store.stages import cache_stages

_MAX_SCRATCH = 8  # scratch stores a worker keeps (runs of a sweep, one after the other)
_MISSING = object()


# ----------------------------------------------------------------------------------------------- driver side
_tokens: weakref.WeakKeyDictionary[RunStore, str] = weakref.WeakKeyDictionary()
_counter = itertools.count()


def store_token(store: Any) -> str:
    """A name for ``store`` unique to this driver process and this open store."""
    token = _tokens.get(store)
    if token is None:
        token = _tokens[store] = f"{os.getpid()}-{time.time_ns()}-{next(_counter)}"
    return token


def _snapshot(store: RunStore, exclude: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(stage, unit["key"], unit["record"]) for stage in cache_stages() if stage != exclude
            for unit in store.iter_units(stage)]


def dumps_compute(compute: Callable[..., Any], stage: str) -> bytes:
    """``compute`` pickled for a worker (see the module docstring); ``stage`` is the one it computes."""
    from ray import cloudpickle

    class _Pickler(cloudpickle.CloudPickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, RunStore):
                return scratch_store, (store_token(obj), _snapshot(obj, stage))
            attributes = getattr(obj, "__dict__", None)  # never getattr(obj, ...): a stand-in would load
            recipe = attributes.get("load_recipe") if isinstance(attributes, dict) else None
            if isinstance(recipe, LoadRecipe):
                return shared_model, (recipe,)
            if not isinstance(obj, type) and hasattr(type(obj), "generate") and hasattr(type(obj), "capabilities"):
                raise UserError(f"{getattr(obj, 'name', obj)!r} was not loaded from a model spec, so Ray workers "
                                "cannot load it: load models with robusteval.load_model(spec, ...)")
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=5).dump(compute)
    except UserError:
        raise
    except Exception as exc:  # a pipeline captured something that cannot travel: a bug to report
        raise RuntimeError(f"{stage}: its compute cannot be sent to a worker: {type(exc).__name__}: {exc}") from exc
    return buffer.getvalue()


class WorkerModel:
    """The driver's handle on a model that the workers load: ``name``, ``identity``, ``capabilities`` as the
    workers resolved them (an API backend's probe ran there) and, for a backend that has one, what its ``scoring``
    probe found: what keys, identities, capability checks and their error messages need, without loading the
    model here. It travels to workers as its ``load_recipe``. Plain class-level values of the backend's class are
    answered as they are; methods keep their signatures; calling one (or reading any other attribute: an instance
    attribute or a property of the loaded model) loads the model in the driver too, once, with a line saying so,
    so code that needs the model here still works."""

    def __init__(self, recipe: LoadRecipe, description: dict[str, Any]):
        self.load_recipe = recipe
        self.name: str = description["name"]
        self.identity: dict[str, Any] = dict(description["identity"])
        self.capabilities = frozenset(description["capabilities"])
        if description.get("scoring") is not None:
            from robusteval.models.openai_scoring import ScoringSupport

            self.scoring = ScoringSupport(**description["scoring"])
        self._class_path: str = description["class"]
        self._attributes = frozenset(description["attributes"])  # the loaded backend's own (instance) attributes
        self._local: Any = None
        for name, value in description.get("values", {}).items():
            if name not in vars(self):  # plain values as the loaded model has them; what is set above wins
                setattr(self, name, value)

    def resolve_capabilities(self) -> frozenset[str]:
        """The capabilities the workers resolved when they loaded the model (nothing is asked here)."""
        return self.capabilities

    def __repr__(self) -> str:
        return f"WorkerModel({self.name!r}, {self.identity.get('device', '?')} on the workers)"

    def _class(self) -> type:
        import importlib

        module, _, qualname = self._class_path.partition(":")
        # getattr down the qualified name from the module: mypy types the fold as a module; it is the class.
        return cast(type, functools.reduce(getattr, qualname.split("."), importlib.import_module(module)))

    def local(self) -> Any:
        """The model loaded in this process (done on first use)."""
        if self._local is None:
            from robusteval.models.loading import load_here
            from robusteval.progress import status

            status(f"{self.name}: the driver needs the model itself, so it loads it here too")
            self._local = load_here(self.load_recipe.spec, **self.load_recipe.options)
        return self._local

    def __getattr__(self, name: str) -> Any:  # only for what __init__ did not set
        if name.startswith("__") or name in ("_local", "_class_path", "_attributes", "load_recipe"):
            raise AttributeError(name)
        member = inspect.getattr_static(self._class(), name, _MISSING)
        if name not in self._attributes:  # a class-level member, or nothing: answered without loading the model
            if member is _MISSING:
                raise AttributeError(f"{self._class_path} has no attribute {name!r}")
            if not inspect.isfunction(member) and not hasattr(type(member), "__get__"):
                return member  # a plain value of the class (a constant): what the loaded model would give
        if inspect.isfunction(member):
            @functools.wraps(member)
            def call(*args: Any, **kwargs: Any) -> Any:
                return getattr(self.local(), name)(*args, **kwargs)

            signature = inspect.signature(member)
            call.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
            del call.__wrapped__  # inspect.signature would otherwise unwrap to the unbound method
            return call
        return getattr(self.local(), name)


# ----------------------------------------------------------------------------------------------- worker side
_models: dict[str, Any] = {}
_scratch: OrderedDict[str, ScratchStore] = OrderedDict()


#: Types of the loaded backend's attributes the driver's stand-in copies (``context_length``, ``batch_size``...):
#: reading one must not load the model on the driver.
_PLAIN = (bool, int, float, str, type(None))


def describe(backend: Any) -> dict[str, Any]:
    """What the driver's :class:`WorkerModel` needs to know about a loaded backend: its capabilities resolved
    here (an API backend asks its server, once per worker), what its ``scoring`` probe found, if it has one, and its
    plain-valued attributes."""
    from robusteval.models.base import resolve_capabilities

    cls = type(backend)
    capabilities = resolve_capabilities(backend)
    scoring = backend.scoring.as_dict() if inspect.getattr_static(cls, "scoring", None) is not None else None
    return {"name": backend.name, "identity": dict(backend.identity), "capabilities": sorted(capabilities),
            "scoring": scoring, "class": f"{cls.__module__}:{cls.__qualname__}", "attributes": sorted(vars(backend)),
            "values": {name: value for name, value in vars(backend).items()
                       if not name.startswith("_") and isinstance(value, _PLAIN)}}


def model_key(spec: Any, options: dict[str, Any]) -> str:
    """What names a loaded model in a worker: its spec and load options."""
    return canonical_json([str(spec), options])


def loaded_models() -> list[str]:
    return sorted(_models)


def release_model(key: str) -> None:
    """Forget a model the driver no longer holds (its memory goes once nothing else refers to it)."""
    if _models.pop(key, None) is not None:
        import gc

        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()


def shared_model(recipe: LoadRecipe) -> Any:
    """The model of ``recipe``, loaded once per process; refused when it resolves to another identity here."""
    from robusteval.models.loading import load_here

    key = model_key(recipe.spec, recipe.options)
    backend: Any = _models.get(key)  # a loaded backend, which carries its identity (models.loading)
    if backend is None:
        backend = _models[key] = load_here(recipe.spec, **recipe.options)
    if recipe.identity and dict(backend.identity) != recipe.identity:
        differing = sorted(k for k in set(backend.identity) | set(recipe.identity)
                           if backend.identity.get(k) != recipe.identity.get(k))
        detail = "; ".join(f"{k}: run {recipe.identity.get(k)!r}, worker {backend.identity.get(k)!r}"
                           for k in differing)
        raise UserError(f"{backend.name}: a worker on {os.uname().nodename} resolves the model differently from "
                        f"the run ({detail}); give --device/--dtype explicitly, or use workers of one kind")
    return backend


class ScratchStore:
    """A worker's stand-in for the run store: serves the snapshot it was sent and what this worker computed
    for the run, and keeps every unit written until :func:`drain_side_units` sends it to the driver. Records
    are kept as the same canonical JSON as the run store's, so a reader gets what it would get there."""

    read_only = False

    def __init__(self, token: str):
        self.token = token
        self._units: dict[tuple[str, str], str] = {}
        self._pending: list[dict[str, Any]] = []

    def get(self, stage: str, key: str) -> dict[str, Any] | None:
        text = self._units.get((stage, key))
        return None if text is None else json.loads(text)

    def keys(self, stage: str) -> set[str]:
        return {key for st, key in self._units if st == stage}

    def records(self, stage: str) -> list[dict[str, Any]]:
        return [json.loads(text) for (st, _), text in self._units.items() if st == stage]

    def put(self, stage: str, key: str, record: dict[str, Any], example_id: str | None = None,
            seconds: float | None = None, created: float | None = None) -> None:
        text = canonical_json(record)
        if self._units.get((stage, key)) == text:
            return
        self._units[(stage, key)] = text
        self._pending.append({"token": self.token, "stage": stage, "key": key, "record": json.loads(text),
                              "example_id": example_id, "seconds": seconds})

    def drain(self) -> list[dict[str, Any]]:
        pending, self._pending = self._pending, []
        return pending


def scratch_store(token: str, snapshot: list[tuple[str, str, dict[str, Any]]]) -> ScratchStore:
    """This process's scratch store for the run ``token``, holding at least ``snapshot``."""
    store = _scratch.get(token)
    if store is None:
        store = _scratch[token] = ScratchStore(token)
        while len(_scratch) > _MAX_SCRATCH:
            _scratch.popitem(last=False)
    _scratch.move_to_end(token)
    for stage, key, record in snapshot:
        store._units.setdefault((stage, key), canonical_json(record))
    return store


def drain_side_units() -> list[dict[str, Any]]:
    """Every unit written to a scratch store since the last call (a failed batch's cache units included)."""
    return [unit for store in _scratch.values() for unit in store.drain()]
