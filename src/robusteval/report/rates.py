"""Every headline number of a run, with its denominator and 95% interval: what ``runs show`` prints as its
"rates" block and what :func:`results_frame` (``rv.results_frame``) puts in one tidy table across runs.

The numbers are the report's own (the section builders' :class:`~robusteval.report.model.Num`: value as the
summary stores it, n, interval), so no surface can disagree with another. ``denominator`` names what n counts
(an attack's success rates rest on ``n_attacked``, not on ``n``). A registered method's results give its own
(:attr:`~robusteval.report.method_results.MethodResults.rates`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from robusteval.config import path_list
from robusteval.errors import UserError
from robusteval.methods import results_of_command
from robusteval.metrics.stats import wilson_interval
from robusteval.report.collect import (
    collect,
    dataset_name,
    model_name,
)
from robusteval.report.comparability import comparability_key, key_hash
from robusteval.report.model import Num, Rate
from robusteval.report.tables import format_num
from robusteval.runs import Run

if TYPE_CHECKING:
    import pandas as pd


def _with_interval(num: Num) -> Num:
    """A proportion's Num with a Wilson interval from its value and n where the summary stored none."""
    if num.ci is not None or num.value is None or not num.n:
        return num
    successes = round(num.value * num.n)
    if abs(successes - num.value * num.n) > 1e-6:  # not a share of n examples (a mean): no Wilson interval
        return num
    return replace(num, ci=wilson_interval(successes, num.n))


def run_rates(run: Run) -> list[Rate]:
    """The run's numbers, each with n and its interval (none for a run without a summary)."""
    summary = run.summary or {}
    if not summary:
        return []
    results = results_of_command(run.command)
    if results is not None:
        return list(results.rates(run))
    return accuracy_rates(run)


def accuracy_rates(run: Run) -> list[Rate]:
    """A run's accuracy over n, with its interval (any run whose summary has an ``acc``; none otherwise)."""
    summary = run.summary or {}
    if "acc" in summary:
        return [Rate("acc", _with_interval(Num(summary.get("acc"), n=summary.get("n"), ci=summary.get("acc_ci95"),
                                               runs=(str(run.path),), percent=True)))]
    return []




def rate_text(rate: Rate) -> str:
    """``12.5 % [4.1, 29.0], n_attacked = 40``: the value, its interval and its denominator."""
    num = rate.num
    shown = format_num(rate.num, unit=True)
    if rate.denominator:
        shown += f", {rate.denominator} = {'?' if num.n is None else num.n}"
    return shown + (f" ({rate.note})" if rate.note else "")


def rates_block(run: Run) -> dict[str, str]:
    """``runs show``'s "rates": metric -> readable value, 95% interval and n."""
    return {rate.metric: rate_text(rate) for rate in run_rates(run)}


#: results_frame's columns before the comparability key's fields.
FRAME_COLUMNS = ("run", "method", "model", "dataset", "metric", "value", "n", "denominator", "ci_low", "ci_high",
                 "comparability_key")


def results_rows(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """One row per run x metric (and per stored result x model, ORS's): the rows of :func:`results_frame`."""
    inputs = collect(paths)
    rows: list[dict[str, Any]] = []

    def row(path: str, method: str, model: str, dataset: str, rate: Rate, key: dict[str, str]) -> dict[str, Any]:
        ci = rate.num.ci if rate.num.ci is not None and None not in rate.num.ci else (None, None)
        fields = {name: value for name, value in key.items() if name not in ("method", "dataset")}
        return {"run": path, "method": method, "model": model, "dataset": dataset, "metric": rate.metric,
                "value": rate.num.value, "n": rate.num.n, "denominator": rate.denominator or None,
                "ci_low": ci[0], "ci_high": ci[1], "comparability_key": key_hash(key), **rate.extra, **fields}

    runs = {run.path.resolve(): run for run in [*inputs.runs, *(r for sweep in inputs.sweeps for r in sweep.runs)]}
    for run in runs.values():
        key = comparability_key(run)
        rows += [row(str(run.path), str(run.command), model_name(run), dataset_name(run), rate, key)
                 for rate in run_rates(run)]
    for result in inputs.results:
        key = result.key()
        rows += [row(str(result.path), result.kind, model, "", rate, key) for model, rate in result.rates()]
    return rows


def results_frame(run_dirs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> pd.DataFrame:
    """One tidy pandas DataFrame across runs and methods: a row per run x metric with its value, n (and what n
    counts), 95% interval, the run's comparability key (a short hash: rows with the same one may be compared)
    and the key's fields as columns. ``run_dirs`` are read as ``runs compare`` reads them (run, sweep and ORS
    directories, or directories holding them)."""
    try:
        import pandas as pd
    except ImportError:
        raise UserError("results_frame needs pandas: pip install pandas") from None
    rows = results_rows(path_list(run_dirs, "results_frame()"))
    extra = list(dict.fromkeys(name for row in rows for name in row if name not in FRAME_COLUMNS))
    return pd.DataFrame.from_records(rows, columns=[*FRAME_COLUMNS, *extra])
