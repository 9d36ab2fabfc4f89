"""What makes two runs' numbers comparable: a key per run, read from its identity and summary.

Two runs rank together only when their keys are equal: the same method, dataset content (its hash, not its
path), label mode, judges, success rule, attack settings (every hyper-parameter but the seed), exemplars, chat
or not, prompt... Everything the run identity records counts, except what may differ between the runs being
compared: the model (that is what is compared), seeds (repeats of one setting), file paths whose content hash
is recorded, and the identity's version. Settings that change numbers without changing stored units (label
mode) come from the summary, as do defaults of older runs (a method's results resolve them:
``MethodResults.comparability``, e.g. an attack's ``counting`` absent = ``ours``: runs counted by the authors'
rules never rank with ours).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.methods import results_of_command
from robusteval.runs import Run

#: Identity fields that never separate comparable runs (see the module docstring; the error classifier only
#: types the successes' errors, it decides no outcome).
NOT_KEY = frozenset({"identity_version", "model", "seed", "bootstrap_seed", "limit", "error_classifier"})
#: Paths whose content the identity also records by hash: the hash is the key, the path is not.
HASHED_PATHS = {"data_file": "data_sha256", "instances": "instances_sha256"}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def comparability_key(run: Run) -> dict[str, str]:
    """The run's comparability key: field -> value as text (nested settings flattened as ``config.steps``)."""
    identity = dict(run.identity)
    summary = run.summary or {}
    key: dict[str, Any] = {"method": identity.get("command") or "?"}
    for name, value in identity.items():
        if name in NOT_KEY or name == "command":
            continue
        if name in HASHED_PATHS and identity.get(HASHED_PATHS[name]):
            continue
        if isinstance(value, Mapping) and name == "config":  # an attack's resolved hyper-parameters
            key.update({f"config.{k}": v for k, v in value.items() if k not in NOT_KEY})
        else:
            key[name] = value
    if "label_mode" in summary:  # robustness: not in the identity (a run can be re-summarised in either mode)
        key["label_mode"] = summary["label_mode"]
    results = results_of_command(run.command)
    if results is not None and results.comparability is not None:  # the method's own fields (its resolved rules)
        key = results.comparability(run, key)
    return {name: _text(value) for name, value in sorted(key.items())}


def key_hash(key: Mapping[str, str]) -> str:
    """A short stable name for a key (12 hex digits of the SHA-256 of its canonical JSON)."""
    return hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode("utf-8")).hexdigest()[:12]


def differing_fields(keys: Sequence[Mapping[str, str]]) -> list[str]:
    """The fields whose value is not the same in every key (a field missing from one counts as differing)."""
    names = sorted({name for key in keys for name in key})
    return [name for name in names if len({key.get(name) for key in keys}) > 1]


def why_apart(key: Mapping[str, str], others: Sequence[Mapping[str, str]], *, width: int = 60) -> str:
    """One line: how ``key`` differs from the other groups' keys (the differing fields and this group's values)."""
    fields = differing_fields([key, *others])
    if not fields:
        return ""
    shown = []
    for name in fields:
        value = key.get(name, "(not recorded)")
        shown.append(f"{name}={value if len(value) <= width else value[: width - 1] + '…'}")
    return "not comparable with the other groups: " + "; ".join(shown)
