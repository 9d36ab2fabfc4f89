"""The word-importance attack's ``runs compare`` leaderboards: its runs ranked by the success rate at their
largest α, and ORS results ranked by their score."""

from __future__ import annotations

from robusteval.attacks.wordimportance.pipeline import COMMAND
from robusteval.attacks.wordimportance.results.ors import KIND as ORS
from robusteval.attacks.wordimportance.results.ors import OrsResult, ors_score
from robusteval.attacks.wordimportance.results.section import (
    method_name,
    queries_per_success,
    success_rate,
    top_rate,
)
from robusteval.report.collect import dataset_name, model_name
from robusteval.report.compare import Board, Row
from robusteval.report.model import Num
from robusteval.runs import Run


def wordimportance_rows(run: Run) -> list[Row]:
    top = top_rate(run)
    return [{"model": model_name(run), "dataset": dataset_name(run), "method": method_name(run),
             "rate": str(top), "n_attacked": str((run.summary or {}).get("n_attacked")),
             "asr": success_rate(run, top) if top else Num(None),
             "queries_per_success": queries_per_success(run, top) if top else Num(None)}]


def ors_rows(result: OrsResult) -> list[Row]:
    rows: list[Row] = []
    for model in result.data.get("ors") or {}:
        score = ors_score(result, model)
        rows.append({"model": result.model(model), "beta": str(result.data.get("beta")),
                     "n": "?" if score.n is None else str(score.n), "ors": score})
    return rows


def tested_metric(run: Run, metric: str) -> str:
    """The run's name for a tested number: ``asr[top]`` is the success rate at its largest α."""
    return f"asr[{top_rate(run)}]" if metric == "asr[top]" else metric


BOARDS = (
    Board("wordimportance", COMMAND, "Hard-label attacks: lower success rate at the largest α ranks first",
          ("dataset", "method", "rate", "n_attacked", "asr", "queries_per_success"), (("asr", False),),
          wordimportance_rows, ("asr", "n_attacked"), tested=(("asr", "asr[top]", "lower"),),
          metric_of=tested_metric, headings={"asr": "ASR %", "queries_per_success": "queries/success"}),
    Board("ors", ORS, "ORS: higher score ranks first", ("beta", "n", "ors"), (("ors", True),), ors_rows, None,
          headings={"ors": "ORS"}),
)
