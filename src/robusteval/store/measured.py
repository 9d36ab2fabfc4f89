"""What a summary or a run's info records of the invocation that wrote it rather than of the run's results: the
process's peak memory and torch's thread choice (which depends on the machine's load then).

A re-run that computes nothing must not rewrite a finished run for them: its summary and info keep the values of
the invocation that computed the results (so a finished run on a read-only medium can be re-summarised, and a
no-op re-run leaves the files byte-identical). Anything else that differs is written as always, with the new
measurements."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

#: Top-level keys that are measurements of the invocation.
MEASURED = ("peak_memory",)
#: Keys inside ``environment`` that are measurements of the invocation.
MEASURED_ENVIRONMENT = ("torch_threads",)


def without_measurements(value: Any) -> Any:
    """``value`` less its measurements (a copy; anything but a mapping is returned as it is)."""
    if not isinstance(value, dict):
        return value
    out = {key: item for key, item in value.items() if key not in MEASURED}
    environment = out.get("environment")
    if isinstance(environment, dict):
        out["environment"] = {key: item for key, item in environment.items() if key not in MEASURED_ENVIRONMENT}
    return out


def keep_measurements(previous: Any, new: Any) -> Any:
    """``new``, with ``previous``'s measurements where the two differ in nothing else (else ``new`` itself)."""
    if not isinstance(previous, dict) or not isinstance(new, dict):
        return new
    if _text(without_measurements(previous)) != _text(without_measurements(new)):
        return new
    kept = _with_previous(new, previous, MEASURED)
    old_environment, environment = previous.get("environment"), kept.get("environment")
    if isinstance(old_environment, dict) and isinstance(environment, dict):
        kept["environment"] = _with_previous(environment, old_environment, MEASURED_ENVIRONMENT)
    return kept


def _with_previous(new: dict[str, Any], previous: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """A copy of ``new`` whose ``keys`` are as ``previous`` has them (absent where it has none)."""
    kept = dict(new)
    for key in keys:
        if key in previous:
            kept[key] = previous[key]
        else:
            kept.pop(key, None)
    return kept


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
