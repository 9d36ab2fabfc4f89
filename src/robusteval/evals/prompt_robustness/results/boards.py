"""The ``runs compare`` leaderboards of the three modes (terminal, CSV and LaTeX through the generic board tables):
one row per run, every number the one :mod:`.numbers` gives (value, n, interval), most robust first.

* perturbed prompts: lower PDR over every changed prompt (the RB-index of the set) ranks first;
* adversarial prompt search: higher held-out accuracy under the found instruction ranks first;
* prompt spread: higher worst-case accuracy (every prompt right) ranks first, then lower spread.
"""

from __future__ import annotations

from typing import Any

from robusteval.evals.prompt_robustness.results import numbers
from robusteval.evals.prompt_robustness.results.numbers import CLEAN, FOUND
from robusteval.report.collect import dataset_name, model_name
from robusteval.report.compare import Board, Row
from robusteval.report.model import Num
from robusteval.runs import Run


def describe(entry: Any) -> str:
    """A spread prompt in a few words: its own instruction, or its format's choices (``the template's own``)."""
    if not isinstance(entry, dict):
        return ""
    if entry.get("instruction"):
        return str(entry["instruction"])
    fmt = entry.get("format") or {}
    return ", ".join(f"{key}={value!r}" for key, value in fmt.items() if value not in (None, "as-is")) or \
        "the template's own"


def _common(run: Run) -> Row:
    summary = run.summary or {}
    return {"model": model_name(run), "dataset": dataset_name(run),
            "label_mode": str(summary.get("label_mode") or "hard")}


def perturb_rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    worst = numbers.worst_prompt(summary)
    return [{**_common(run), "target": str(summary.get("target")), "methods": str(summary.get("methods_spec")),
             "prompts": f"{len(numbers.changed_prompts(summary))} of {len(summary.get('prompts') or {})} changed",
             "n": str(summary.get("n")), "acc_clean": numbers.perturb_accuracy(run, CLEAN),
             "worst_prompt": worst or "-",
             "acc_worst": numbers.perturb_accuracy(run, worst) if worst else Num(None),
             "pdr": numbers.perturb_pdr(run)}]


def search_rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    return [{**_common(run), "methods": str(summary.get("methods_spec")),
             "search_size": str(summary.get("search_size")),
             "n_held_out": str((summary.get("held_out") or {}).get("n")),
             "queries": f"{summary.get('queries')} of {summary.get('budget')}",
             "acc_clean": numbers.search_accuracy(run, CLEAN), "acc_found": numbers.search_accuracy(run, FOUND),
             "drop": numbers.search_drop(run), "pdr": numbers.search_drop(run, relative=True),
             "edits": str(len(summary.get("edits") or []))}]


def spread_rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    best = summary.get("argmax")
    return [{**_common(run), "n": str(summary.get("n")), "prompts": str(summary.get("n_prompts")),
             **{key: numbers.spread_number(run, key) for key in ("min", "max", "mean", "spread", "worst_case")},
             "best_prompt": f"{best}: {describe((summary.get('prompts') or {}).get(best))}" if best else "-"}]


PERTURB_BOARD = Board(
    "prompt-robustness", "prompt-robustness", "Perturbed prompts: lower PDR ranks first",
    ("dataset", "target", "methods", "prompts", "label_mode", "n", "acc_clean", "worst_prompt", "acc_worst", "pdr"),
    (("pdr", False),), perturb_rows, ("pdr", "n"),
    tested=(("pdr", "pdr", "lower"), ("acc_clean", f"acc[{CLEAN}]", "higher")))
SEARCH_BOARD = Board(
    "prompt-search", "prompt-robustness search",
    "Adversarial prompt search: higher held-out accuracy under the found instruction ranks first",
    ("dataset", "methods", "label_mode", "search_size", "n_held_out", "queries", "edits", "acc_clean", "acc_found",
     "drop", "pdr"),
    (("acc_found", True),), search_rows, ("acc_found", "n_held_out"),
    tested=(("acc_found", f"acc[{FOUND}]", "higher"), ("drop", "drop", "lower")))
SPREAD_BOARD = Board(
    "prompt-spread", "prompt-robustness spread",
    "Prompt spread: higher worst-case accuracy (every prompt right) ranks first, then lower spread",
    ("dataset", "label_mode", "n", "prompts", "min", "max", "mean", "spread", "worst_case", "best_prompt"),
    (("worst_case", True), ("spread", False)), spread_rows, ("worst_case", "n"),
    tested=(("worst_case", "worst_case", "higher"), ("spread", "spread", "lower")))
