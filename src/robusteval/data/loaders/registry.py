"""The dataset registry: ``@register_dataset`` adds a loader, :func:`load_dataset` reaches it by name.

:func:`load_dataset` checks the arguments against what the loader accepts (a field mapping and an answer type
only for the generic formats), finds the default file under ``$ROBUSTEVAL_DATA_DIR`` when no path is given,
and calls the loader. Nothing is looked up with ``eval``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.example import Example
from robusteval.data.loaders.fields import _ANSWER_TYPES, _resolve_fields
from robusteval.errors import UserError
from robusteval.registry import Registry

DatasetLoader = Callable[..., list[Example]]

#: Directory holding the built-in datasets (``<dir>/gsm8k/test.jsonl`` ...) when no path is given.
DATA_DIR_ENV = "ROBUSTEVAL_DATA_DIR"


@dataclass(frozen=True)
class _Entry:
    loader: DatasetLoader
    answer_type: str
    params: frozenset[str]  # keyword parameters the loader accepts: decides what load_dataset may pass
    default_file: str | None  # relative to $ROBUSTEVAL_DATA_DIR
    streams: bool  # reads only ``limit`` records (hub datasets); file loaders always check the whole file


#: name -> loader; the entry's ``meta["entry"]`` holds what :func:`load_dataset` checks arguments against.
DATASETS: Registry[DatasetLoader] = Registry("dataset", entry_points="robusteval.datasets")


def register_dataset(
    name: str, answer_type: str, *, default_file: str | None = None, streams: bool = False
) -> Callable[[DatasetLoader], DatasetLoader]:
    """Register a loader under ``name``.

    ``answer_type`` is the type of every example (or the default, for loaders that take an ``answer_type``
    parameter). A loader is called as ``loader(path, limit=..., [fields=..., answer_type=..., split=...])``;
    the optional keywords are passed only when its signature names them.
    """
    if answer_type not in _ANSWER_TYPES:
        raise ValueError(f"unknown answer type {answer_type!r}; expected one of {sorted(_ANSWER_TYPES)}")

    def decorator(loader: DatasetLoader) -> DatasetLoader:
        entry = _Entry(loader, answer_type, frozenset(inspect.signature(loader).parameters), default_file, streams)
        summary = (inspect.getdoc(loader) or "").split("\n")[0]
        return DATASETS.register(name, summary=summary, entry=entry)(loader)

    return decorator


def _entries() -> dict[str, _Entry]:
    return {e.name: e.meta["entry"] for e in DATASETS.entries()}


def dataset_names() -> list[str]:
    return DATASETS.names()


def dataset_kinds() -> dict[str, str]:
    """name -> "qa" (fixed-format question/answer data), "label" (classification data) or "generic" (formats
    whose fields and answer type the user gives), in name order: what command choices are built from."""
    return {name: "generic" if "answer_type" in entry.params or name == "examples"
            else "label" if entry.answer_type == "label" else "qa"
            for name, entry in sorted(_entries().items())}


def load_dataset(
    name: str,
    path: str | Path | None = None,
    *,
    limit: int | None = None,
    fields: dict[str, str] | None = None,
    answer_type: str | None = None,
    split: str = "test",
) -> list[Example]:
    """Load dataset ``name`` from ``path`` (the first ``limit`` examples when given).

    ``fields`` and ``answer_type`` apply to the generic loaders (jsonl, csv, hf); the built-in datasets have a
    fixed format and type, and a conflicting value is an error rather than silently ignored. Without ``path``
    a built-in dataset is read from ``$ROBUSTEVAL_DATA_DIR``.
    """
    found = DATASETS.find(name)
    entry: _Entry | None = found.meta["entry"] if found is not None else None
    if entry is None:
        raise UserError(f"unknown dataset {name!r}; available: {', '.join(dataset_names())}")
    if limit is not None and limit < 0:
        raise UserError(f"limit must be >= 0, got {limit}")
    if path is None:
        path = _default_path(name, entry)

    kwargs: dict[str, Any] = {"limit": limit if entry.streams else None}
    if "fields" in entry.params:
        kwargs["fields"] = _resolve_fields(fields)
    elif fields:
        raise UserError(f"dataset {name!r} has a fixed format; a field mapping applies to jsonl, csv and hf")
    if "answer_type" in entry.params:
        chosen = answer_type or entry.answer_type
        if chosen not in _ANSWER_TYPES:
            raise UserError(
                f"unknown answer type {chosen!r}; expected one of {', '.join(sorted(_ANSWER_TYPES))}"
            )
        kwargs["answer_type"] = chosen
    elif answer_type is not None and answer_type != entry.answer_type:
        raise UserError(f"dataset {name!r} has answer type {entry.answer_type!r}, not {answer_type!r}")
    if "split" in entry.params:
        kwargs["split"] = split
    if limit == 0:
        return []
    examples = entry.loader(path, **kwargs)
    return examples if limit is None else examples[:limit]


def _default_path(name: str, entry: _Entry) -> Path:
    if entry.default_file is None:
        raise UserError(f"dataset {name!r} needs a path")
    root = os.environ.get(DATA_DIR_ENV)
    if not root:
        raise UserError(
            f"dataset {name!r}: no path given; pass one or set {DATA_DIR_ENV} to the directory "
            f"holding {entry.default_file}"
        )
    return Path(root) / entry.default_file
