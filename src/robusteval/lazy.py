"""A package's names resolved on first use: its module-level ``__getattr__`` (PEP 562).

A package whose ``__init__`` must stay light (a method's, read by ``robusteval --help`` through its registration)
lists where each public name lives; the module is imported only when the name is first read, then the name is
kept in the package so later reads skip the lookup. Names are looked up, never evaluated.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], *, rest: str | None = None) -> Callable[[str], Any]:
    """``__getattr__`` for ``package``: ``name`` from the module ``exports[name]``; any other public name from
    ``rest`` (the module the package stands for), or an AttributeError."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name) or (rest if rest is not None and not name.startswith("__") else None)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
