"""The fields of a MATCHA run's comparability key that its summary resolves (its results' ``comparability`` hook,
:func:`robusteval.report.comparability.comparability_key`): the success rule and the counting rules as the run
used them (runs made before either was an option used ``final`` and ours), its judges and its target answer."""

from __future__ import annotations

from typing import Any

from robusteval.report.comparability import NOT_KEY
from robusteval.runs import Run


def matcha_key(run: Run, key: dict[str, Any]) -> dict[str, Any]:
    """``key`` (the generic fields from the run's identity) with MATCHA's resolved rules, judges and target."""
    identity = dict(run.identity)
    summary = run.summary or {}
    key = dict(key)
    # The rule that decides success: absent in runs made before it was an option, which used "final".
    hyper = summary.get("hyperparameters") or {}
    key.pop("success_check", None)  # the unresolved option (None: the preset's); the resolved rule follows
    key["config.success_check"] = (hyper.get("success_check") or (identity.get("config") or {}).get(
        "success_check") or "final")
    # The counting rules (issue 26): absent in runs made before the authors' could be chosen, which used ours.
    config = identity.get("config") or {}
    key.pop("counting", None)
    key["config.counting"] = summary.get("counting") or config.get("counting") or identity.get("counting") or "ours"
    judges = {k: v for k, v in (summary.get("judges") or {}).items() if k not in NOT_KEY}
    if judges:
        key["judges"] = judges
    if summary.get("target_answer"):  # "auto" resolves to gold or clean per run
        key["target_answer"] = summary["target_answer"]
    return key
