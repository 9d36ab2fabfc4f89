"""The ``ors`` pipeline (a score over word-importance attack runs): the OAD-based robustness score of models from their word-importance attack runs.

Reads each run's ``summary.json``, checks that the runs fit together (same perturbation rates, each
(model, method) once), builds the success-rate table u_ij(α_k) in percent and applies the formulas of
:mod:`robusteval.metrics.ors`; the interval resamples questions, read with their outcomes from each run's
stored records (:func:`run_outcomes`). No model is loaded, and nothing here imports torch::

    import robusteval as rv

    result = rv.ors(rv.OrsConfig(("runs/wi-A-homophone", "runs/wi-B-homophone"), out="runs/ors"))
    result.result.ors  # model -> ORS
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robusteval.attacks.wordimportance.ors_config import OrsConfig
from robusteval.errors import DataError, UserError
from robusteval.lifecycle import public_entry
from robusteval.metrics.ors import (
    OrsResult,
    RunOutcomes,
    ors_intervals,
    ors_scores,
    success_matrix,
)
from robusteval.metrics.ors_constants import SOURCE
from robusteval.seeding import derive_seed
from robusteval.store import DB_NAME, SUMMARY_NAME, RunStore, write_text_atomic

OUTPUT_NAME = "ors.json"


@dataclass(frozen=True)
class OrsReport:
    rates: list[str]  # the perturbation rates, as the summaries key them, in increasing order
    success_percent: dict[str, dict[str, list[float]]]  # model -> method -> u(α_1..α_K) in percent
    sources: dict[str, dict[str, str]]  # model -> method -> run directory
    config: OrsConfig
    result: OrsResult
    #: model -> n (distinct questions attacked), n_by_method, ci95 (bootstrap over questions), ci95_method,
    #: resampling (questions, or the labelled per-run fallback), fallback, warning
    intervals: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    path: Path | None = None  # the ors.json written, if any

    @property
    def methods(self) -> list[str]:
        return sorted({m for attacks in self.success_percent.values() for m in attacks})

    def to_dict(self) -> dict[str, Any]:
        """What ``ors.json`` holds."""
        return {"rates": self.rates, "success_percent": self.success_percent, "q": self.config.q,
                "eta": self.config.eta, "beta_cap": self.config.beta_cap, "runs": self.sources,
                **self.result.to_dict(), "source": SOURCE,
                **{key: {model: block[key] for model, block in self.intervals.items()}
                   for key in ("n", "n_unit", "n_questions", "n_by_method", "ci95", "ci95_method", "resampling",
                               "fallback")},
                "warnings": [block["warning"] for block in self.intervals.values() if block["warning"]],
                "bootstrap": {"rounds": self.config.bootstrap, "seed": self.config.bootstrap_seed,
                              "resamples": "the distinct questions attacked, with replacement; all methods' outcomes "
                                           "of a question, at every rate, together; beta fixed (where a run's "
                                           "records carry no question id: each run's examples on their own, "
                                           "named in fallback)",
                              "min_attacked": self.config.min_attacked}}

    def rows(self) -> list[dict[str, Any]]:
        """One table row per model: its rs per method (None where it was not attacked so) and its ORS."""
        return [{"model": model, **{m: self.result.scores[model].get(m) for m in self.methods},
                 "ORS": self.result.ors[model], "ci95": (self.intervals.get(model) or {}).get("ci95"),
                 "n": (self.intervals.get(model) or {}).get("n")} for model in self.success_percent]


def read_attack_run(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The summary of a finished ``attack wordimportance`` run, checked for what ORS needs."""
    path = Path(run_dir) / SUMMARY_NAME
    if not path.is_file():
        raise UserError(f"{run_dir}: no {SUMMARY_NAME}; is it a finished `attack wordimportance` run?")
    try:
        summary = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(str(path), f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
    if summary.get("attack") != "wordimportance":
        raise DataError(str(path), "not a word-importance attack summary", field="attack")
    for key in ("model", "method", "asr_by_rate"):
        if key not in summary:
            raise DataError(str(path), "missing field", field=key)
    if any(value is None for value in summary["asr_by_rate"].values()):
        raise DataError(str(path), "no attacked examples (every example was skipped): no success rate",
                        field="asr_by_rate")
    return summary


def attacked_matrix(summary: dict[str, Any], keys: Sequence[str], run_dir: str | os.PathLike[str]) -> np.ndarray:
    """The run's [attacked examples, rates] success matrix, from its per-rate counts (nested across rates)."""
    by_rate = summary.get("by_rate") or {}
    try:
        wins = [int(by_rate[k]["n_success"]) for k in keys]
        attacked = int(by_rate[keys[0]]["n_success"]) + int(by_rate[keys[0]]["n_failed"])
        return success_matrix(wins, attacked)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(str(Path(run_dir) / SUMMARY_NAME), f"per-rate success counts unreadable ({exc})",
                        field="by_rate") from None


def run_outcomes(summary: dict[str, Any], keys: Sequence[str], run_dir: str | os.PathLike[str]) -> RunOutcomes:
    """The run's attacked examples with their questions and outcomes at every rate, from its stored records (a
    question: the example id within the run's data file, by its hash).

    Where the records cannot give them (no store, records without a question id, or records that disagree with
    the summary's counts, as after a rerun with another ``--limit`` in the same directory), the outcomes come
    from the summary's counts without ids, and ``missing`` says why: the interval then falls back, labelled."""
    from robusteval.attacks.wordimportance.pipeline import STAGE

    counted = attacked_matrix(summary, keys, run_dir)

    def fallback(why: str) -> RunOutcomes:
        return RunOutcomes(counted, None, why)

    if not (Path(run_dir) / DB_NAME).is_file():
        return fallback(f"no stored records ({DB_NAME})")
    try:
        with RunStore.open_existing(run_dir) as store:
            stored = store.records(STAGE)
            # A question is its id in its data file: runs on different files share no question.
            data = str(store.identity.get("data_sha256") or store.identity.get("data_file") or "")
    except UserError as exc:
        return fallback(f"stored records unreadable ({exc})")
    attacked = [r for r in stored if r.get("status") != "skipped"]
    if any(r.get("id") is None for r in attacked):
        return fallback("its records carry no question id (a run older than the ids)")
    try:
        matrix = np.array([[bool(r["per_rate"][k]["success"]) for k in keys] for r in attacked],
                          dtype=float).reshape(len(attacked), len(keys))
    except (KeyError, TypeError):
        return fallback("its records carry no per-rate outcomes")
    if matrix.shape != counted.shape or matrix.sum(axis=0).tolist() != counted.sum(axis=0).tolist():
        return fallback(f"its {len(attacked)} stored attacked records disagree with {SUMMARY_NAME}'s counts "
                        f"({counted.shape[0]} attacked)")
    return RunOutcomes(matrix, tuple(f"{data}\x00{r['id']}" for r in attacked))


def success_table(
    runs: Sequence[str | os.PathLike[str]],
) -> tuple[list[str], dict[str, dict[str, list[float]]], dict[str, dict[str, str]]]:
    """(rates, model -> method -> success rates in percent, model -> method -> run directory)."""
    rates, table, sources, _ = success_data(runs)
    return rates, table, sources


def success_data(
    runs: Sequence[str | os.PathLike[str]],
) -> tuple[list[str], dict[str, dict[str, list[float]]], dict[str, dict[str, str]], dict[str, dict[str, RunOutcomes]]]:
    """:func:`success_table` and each run's attacked examples with their question ids and outcomes
    (model -> method -> :class:`RunOutcomes`)."""
    if not runs:
        raise UserError("ORS needs at least one attack run directory")
    table: dict[str, dict[str, list[float]]] = {}
    rate_keys: list[str] | None = None
    sources: dict[str, dict[str, str]] = {}
    matrices: dict[str, dict[str, RunOutcomes]] = {}
    for run_dir in runs:
        summary = read_attack_run(run_dir)
        keys = sorted(summary["asr_by_rate"], key=float)
        if rate_keys is None:
            rate_keys = keys
        elif keys != rate_keys:
            raise UserError(f"{run_dir}: rates {keys} differ from {rate_keys}; "
                            "every run needs the same perturbation rates")
        model, method = summary["model"], summary["method"]
        if method in table.get(model, {}):
            raise UserError(f"{run_dir}: model {model} with method {method} is given twice "
                            f"(also {sources[model][method]})")
        table.setdefault(model, {})[method] = [100.0 * summary["asr_by_rate"][k] for k in keys]
        sources.setdefault(model, {})[method] = str(run_dir)
        matrices.setdefault(model, {})[method] = run_outcomes(summary, keys, run_dir)
    return rate_keys or [], table, sources, matrices


@public_entry
def ors(config: OrsConfig) -> OrsReport:
    """β, λ, rs and each model's ORS from ``config.runs``; writes ``<out>/ors.json`` when ``config.out``
    is set."""
    rates, table, sources, matrices = success_data(config.runs)
    result = ors_scores(table, q=config.q, eta=config.eta, cap=config.beta_cap)
    intervals = ors_intervals(matrices, result.beta, q=config.q, eta=config.eta,
                              seed=derive_seed(config.bootstrap_seed, "ors-bootstrap"),
                              n_resamples=config.bootstrap, min_attacked=config.min_attacked)
    report = OrsReport(rates, table, sources, config, result, intervals)
    if config.out is None:
        return report
    path = write_text_atomic(Path(config.out) / OUTPUT_NAME,
                             json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return dataclasses.replace(report, path=path)


def check_study_options(options: Mapping[str, Any]) -> None:
    """A study file's ``[ors]`` constants (its registration's ``StudyTable``), checked by the config that will use
    them: a :class:`~robusteval.config.ConfigError` naming the field."""
    OrsConfig(("-",), **options)
