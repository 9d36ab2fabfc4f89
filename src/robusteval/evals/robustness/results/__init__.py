"""A perturbed benchmark's results (:class:`~robusteval.report.method_results.MethodResults`): accuracy on the
original and on each set with its label mode and unread labels, the RB-index (and over meaning-preserving edits),
measured preservation (``runs show``); the per-example outcomes behind them (paired tests); its leaderboard
(:mod:`.board`) and its report section (:mod:`.section`)."""

from __future__ import annotations

from typing import Any

from robusteval.evals.robustness import OUTCOME_STAGE
from robusteval.evals.robustness.results import section as perturbed
from robusteval.evals.robustness.results.board import BOARD
from robusteval.metrics.significance import Outcomes, rb_index
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Rate
from robusteval.report.pairing import share_outcomes, stage_records
from robusteval.runs import Run


def rates(run: Run) -> list[Rate]:
    summary = run.summary or {}
    names = [perturbed.ORIGINAL, *(summary.get("sets") or {})]
    mode, unparsed = summary.get("label_mode") or "?", summary.get("n_unparsed") or {}
    # Wherever an accuracy is shown, its label mode and the labels that could not be read (counted wrong).
    out = [Rate(f"acc[{name}]", perturbed.accuracy(run, name),
                note=f"{mode} labels" if mode == "soft" else  # scored, never parsed
                f"{mode} labels, {unparsed.get(name, '?')} unparsed (counted wrong)",
                extra={"n_unparsed": unparsed.get(name)}) for name in names]
    out.append(Rate("rb_index", perturbed.rb_index(run)))
    # Measured preservation (labels attached to the run): each labelled set's share judged same meaning.
    out += [Rate(f"same[{name}]", perturbed.preservation_num(run, name), "labelled edits")
            for name in names[1:] if perturbed.preservation(run, name)]
    if summary.get("preserved_only"):
        out.append(Rate("rb_index[preserved]", perturbed.preserved_rb_index(run), "kept examples"))
    return out


def outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    """Each example right or wrong on the original or one set (``acc[...]``), or its original and every set's
    outcome together (``rb_index``)."""
    by_set: dict[str, dict[str, dict[str, Any]]] = {}
    for i, r in stage_records(run, OUTCOME_STAGE):
        by_set.setdefault(str(r.get("set")), {})[i] = r
    sets = (run.summary or {}).get("sets") or {}
    # The original's outcomes from a set the summary has (a store may keep rows of sets a re-run dropped).
    first = next((by_set[name] for name in sets if name in by_set), None)
    if first is None:
        return None
    if metric == "acc[original]":
        return share_outcomes({i: (bool(r.get("correct_original")), True) for i, r in first.items()}, value)
    if metric.startswith("acc[") and metric[4:-1] in by_set:
        return share_outcomes({i: (bool(r.get("correct")), True) for i, r in by_set[metric[4:-1]].items()}, value)
    if metric != "rb_index":
        return None
    # The sets the index averages: every set, or (where the run leaves out sets that changed no text) those
    # that changed one; the rows must reproduce the run's index either way.
    candidates = [list(sets), [name for name, entry in sets.items() if (entry or {}).get("n_changed", 1)]]
    for names in candidates:
        if names and all(name in by_set for name in names):
            rows = {
                i: (
                    float(bool(r.get("correct_original"))),
                    *(float(bool(by_set[name].get(i, {}).get("correct"))) for name in names),
                )
                for i, r in first.items()
            }
            found = Outcomes(rows, rb_index, value)
            if found.reproduces():
                return found
    return None


#: Numbers about the perturbed sets, not the model: the share of a set's labelled edits judged same meaning.
MEASURED = "same"
#: The RB-index over the edits labelled same meaning (``--preserved-only``), beside the headline.
PRESERVED_RB = "rb_index[preserved]"


def labelled_metrics(cells: list[list[Rate]]) -> list[tuple[str, str]]:
    """The preservation columns some run of the method holds (``same[SET]`` per labelled set, then the
    preserved-only RB-index), in the runs' order: a column only where some cell has labels."""
    names = list(dict.fromkeys(rate.metric for run in cells for rate in run))
    return [*((name, "higher") for name in names if name.split("[", 1)[0] == MEASURED),
            *((name, "lower") for name in names if name == PRESERVED_RB)]


RESULTS = MethodResults(rates=rates, outcomes=outcomes, boards=(BOARD,), section=perturbed.robustness_section,
                        study_extras=labelled_metrics,
                        readings={MEASURED: "share of the labelled edits judged same meaning, no score",
                                  PRESERVED_RB: "{better} is more robust; over the edits labelled same meaning only"},
                        tex_headings={"sets": "Sets"}, metric_names={"rb_index": "RB-index"})
