"""The one registry engine behind every kind of component: backends, datasets, perturbations, judges, attacks.

A kind is one :class:`Registry`; implementations join it with its decorator, e.g.
``@ATTACKS.register("matcha", summary="…")``. The modules that register built-ins are imported only when a
registry is first read, so ``import robusteval`` and ``robusteval --help`` stay light. Nothing is looked up
with ``eval``: names map to objects. The CLI reads names and summaries from here for its choices and help.

An installed third-party package adds to a kind through the kind's entry-point group (``robusteval.methods``,
``robusteval.backends``, ``robusteval.judges``, ``robusteval.perturbations``, ``robusteval.datasets``): each
entry point names a module (``my_pkg.robusteval_plugin``) whose import registers, read with the built-ins.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from robusteval.errors import UserError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered implementation. ``extra`` names the optional-dependency extra it needs, if any."""

    name: str
    value: T
    summary: str = ""
    extra: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    key: Hashable = None


class Registry(Generic[T]):
    """Names (or name-plus-qualifier keys, such as (method, language)) -> implementations of one kind."""

    def __init__(self, kind: str, modules: Sequence[str] | Callable[[], Sequence[str]] = (), *,
                 lazy: Mapping[str, str] | None = None, entry_points: str | None = None):
        """``modules`` register the built-ins and are imported on first read (or a function giving them, for a
        kind whose built-ins are found rather than listed). ``lazy`` maps a name to the one module that registers
        it, imported only when that name is looked up (heavy modules such as torch backends), so listing names
        stays cheap. ``entry_points``: the group through which installed packages add to the kind."""
        self.kind = kind
        self._modules = modules if callable(modules) else tuple(modules)
        self._lazy = dict(lazy or {})
        self.entry_points = entry_points
        self._entries: dict[Hashable, Entry[T]] = {}
        self._loaded = False

    def register(self, name: str, *, summary: str = "", extra: str | None = None, key: Hashable = None,
                 replace: bool = False, **meta: Any) -> Callable[[T], T]:
        """Decorator adding ``name`` (or ``key``, when one name has several qualified entries)."""

        def wrap(value: T) -> T:
            entry_key = name if key is None else key
            if entry_key in self._entries and not replace:
                raise ValueError(f"{self.kind} {entry_key!r} is already registered")
            self._entries[entry_key] = Entry(name, value, summary, extra, dict(meta), entry_key)
            return value

        return wrap

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True  # first, so a module that reads the registry while importing cannot loop
            for module in self._modules() if callable(self._modules) else self._modules:
                importlib.import_module(module)
            if self.entry_points:
                for point in importlib.metadata.entry_points(group=self.entry_points):
                    _load_plugin(self.entry_points, point)

    def entries(self) -> list[Entry[T]]:
        self._load()
        return list(self._entries.values())

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self.entries())

    def names(self) -> list[str]:
        return sorted({entry.name for entry in self.entries()} | set(self._lazy))

    def find(self, key: Hashable) -> Entry[T] | None:
        self._load()
        if key not in self._entries and isinstance(key, str) and key in self._lazy:
            importlib.import_module(self._lazy[key])
        return self._entries.get(key)

    def get(self, key: Hashable, *, hint: str = "") -> Entry[T]:
        """The entry for ``key``; an unknown one is a UserError listing what exists."""
        entry = self.find(key)
        if entry is None:
            name = key[0] if isinstance(key, tuple) else key
            raise UserError(f"unknown {self.kind} '{name}'{hint}; available: {', '.join(self.names())}")
        return entry

    @contextmanager
    def scoped(self) -> Iterator[Registry[T]]:
        """Registrations made inside the block are forgotten after it (tests, experiments)."""
        self._load()
        saved = dict(self._entries)
        try:
            yield self
        finally:
            self._entries = saved

    def help_text(self) -> str:
        """``name: summary`` for every entry, for ``--help``."""
        return "; ".join(f"{e.name}: {e.summary}" if e.summary else e.name
                         for e in sorted(self.entries(), key=lambda e: e.name))


def _load_plugin(group: str, point: importlib.metadata.EntryPoint) -> None:
    """Import an installed package's registration; one that fails is one line naming the package and the entry
    point (a broken plugin is the user's to fix or uninstall, not a traceback out of robusteval)."""
    try:
        point.load()
    except Exception as exc:
        owner = f" (package {point.dist.name})" if point.dist is not None else ""
        raise UserError(f"plugin {point.name} = {point.value}{owner}, entry point group {group}: failed to load: "
                        f"{type(exc).__name__}: {exc}") from exc
