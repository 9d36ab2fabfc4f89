"""Every number of a prompt-robustness run (the three modes), with its n and 95% interval, and the per-example
outcomes behind each for the paired tests between models.

The numbers are the summary's own (value as stored, its interval: Wilson for an accuracy, the paired bootstrap
over questions, with its stated fallback, for a PDR, a drop, the spread and the min/max/mean of the prompts'
accuracies); n counts the questions every prompt asked (search: the held-out examples). The per-example
outcomes come from the summary's ``per_example`` block (:mod:`robusteval.evals.prompt_robustness.outcomes`);
a run made before it was kept has none, and its numbers are said not tested.

Metric names (``runs show``, ``results_frame``, the study leaderboard): perturb: ``acc[clean]``, ``acc[PROMPT]``,
``pdr`` (over every changed prompt: the RB-index of the set), ``pdr[METHOD]``, ``pdr[PROMPT]``, ``rb_index``;
search: ``acc[clean]`` and ``acc[found]`` on the held-out examples, ``drop`` (clean - found), ``pdr``; spread:
``acc[PROMPT]``, ``min``, ``max``, ``mean``, ``spread``, ``worst_case`` (every prompt right), ``best_case``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from robusteval.evals.prompt_robustness.outcomes import decode
from robusteval.metrics.significance import Outcomes, rb_index, share
from robusteval.report.model import Num, Rate
from robusteval.runs import Run

CLEAN = "clean"
FOUND = "found"


def _summary(run: Run) -> Mapping[str, Any]:
    return run.summary or {}


def label_caveat(summary: Mapping[str, Any], names: Sequence[str]) -> str:
    """The cell's caveat: the label mode and, for hard labels, the unreadable answers of ``names`` (counted
    wrong)."""
    mode = str(summary.get("label_mode") or "hard")
    counts = summary.get("n_unparsed") or {}
    if isinstance(summary.get("held_out"), Mapping):
        counts = summary["held_out"].get("n_unparsed") or counts
    missing = sum(int(counts.get(name) or 0) for name in names)
    return f"hard labels, {missing} unparsed" if mode == "hard" and missing else f"{mode} labels"


def _num(run: Run, value: Any, n: Any, ci: Any, *, note: str = "", caveat: str = "") -> Num:
    return Num(value, n=n, ci=ci, runs=(str(run.path),), percent=True, note=note, caveat=caveat)


# ------------------------------------------------------------------------------------------------------ perturb

def perturb_accuracy(run: Run, name: str) -> Num:
    """The accuracy with the clean prompt (``clean``) or one perturbed prompt, over the n questions."""
    summary = _summary(run)
    n = summary.get("n")
    if name == CLEAN:
        return _num(run, summary.get("acc_clean"), n, summary.get("acc_clean_ci95"),
                    note=f"{summary.get('n_correct_clean')} right with the clean prompt",
                    caveat=label_caveat(summary, [CLEAN]))
    entry = (summary.get("prompts") or {}).get(name)
    if not isinstance(entry, Mapping):
        return Num(None, note=f"no prompt {name} in this run")
    return _num(run, entry.get("acc"), n, entry.get("acc_ci95"),
                note=f"{entry.get('n_correct')} right; drop {entry.get('drop')} {entry.get('drop_ci95')}",
                caveat="; ".join(filter(None, [label_caveat(summary, [name]),
                                               "" if entry.get("changed", True) else "unchanged prompt"])))


def perturb_pdr(run: Run, scope: str | None = None) -> Num:
    """PromptBench's PDR = 1 - A(perturbed)/A(clean) over every changed prompt (``scope`` None: the RB-index of
    the set), one method's prompts or one prompt, with its paired interval over questions."""
    summary = _summary(run)
    n = summary.get("n")
    if scope is None:
        block: Mapping[str, Any] = {"pdr": summary.get("rb_index"), "pdr_ci95": summary.get("rb_index_ci95"),
                                    "pdr_ci95_method": summary.get("rb_index_ci95_method"), "T": summary.get("T")}
    else:
        found = (summary.get("methods") or {}).get(scope) or (summary.get("prompts") or {}).get(scope)
        if not isinstance(found, Mapping):
            return Num(None, note=f"no method or prompt {scope} in this run")
        if found.get("changed") is False:
            return Num(None, note=f"{scope} changed nothing in the prompt: no PDR")
        block = found
    over = f"over {block['T']} changed prompt(s)" if block.get("T") is not None else "of this prompt"
    return _num(run, block.get("pdr"), n, block.get("pdr_ci95"),
                note=f"PDR = 1 - A(perturbed)/A(clean) {over}; interval: {block.get('pdr_ci95_method')}; lower is "
                     "more robust",
                caveat=label_caveat(summary, [CLEAN, *(summary.get("prompts_in_index") or [])]))


def changed_prompts(summary: Mapping[str, Any]) -> list[str]:
    return [name for name, entry in (summary.get("prompts") or {}).items()
            if isinstance(entry, Mapping) and entry.get("changed", True)]


def worst_prompt(summary: Mapping[str, Any]) -> str | None:
    """The changed perturbed prompt with the lowest accuracy (ties: the first by name, whatever order the summary
    was read back in)."""
    prompts = summary.get("prompts") or {}
    scored = [(prompts[name].get("acc"), name) for name in changed_prompts(summary)
              if prompts[name].get("acc") is not None]
    return min(scored)[1] if scored else None


def perturb_rates(run: Run) -> list[Rate]:
    summary = _summary(run)
    prompts = summary.get("prompts") or {}
    rates = [Rate(f"acc[{CLEAN}]", perturb_accuracy(run, CLEAN)), Rate("pdr", perturb_pdr(run)),
             Rate("rb_index", perturb_pdr(run), note="the RB-index over the perturbed prompts (= their PDR)")]
    rates += [Rate(f"pdr[{method}]", perturb_pdr(run, method)) for method in summary.get("methods") or {}]
    for name in prompts:
        rates.append(Rate(f"acc[{name}]", perturb_accuracy(run, name)))
        if prompts[name].get("changed", True):
            rates.append(Rate(f"pdr[{name}]", perturb_pdr(run, name)))
    return rates


# ------------------------------------------------------------------------------------------------------- search

def search_accuracy(run: Run, name: str) -> Num:
    """The held-out accuracy with the clean (``clean``) or the found (``found``) instruction."""
    summary = _summary(run)
    held = summary.get("held_out") or {}
    n = held.get("n")
    if name == CLEAN:
        return _num(run, held.get("acc_clean"), n, held.get("acc_clean_ci95"),
                    note="held-out examples (not searched on), clean instruction",
                    caveat=label_caveat(summary, [CLEAN]))
    entry = (held.get("prompts") or {}).get(FOUND) or {}
    return _num(run, entry.get("acc"), n, entry.get("acc_ci95"),
                note=f"held-out examples (not searched on), the instruction found in {summary.get('queries')} of "
                     f"{summary.get('budget')} queries",
                caveat="; ".join(filter(None, [label_caveat(summary, [FOUND]),
                                               "" if summary.get("changed") else "the search changed nothing"])))


def search_drop(run: Run, relative: bool = False) -> Num:
    """Held-out accuracy drop from the clean to the found instruction (``relative``: the PDR), paired interval."""
    summary = _summary(run)
    held = summary.get("held_out") or {}
    entry = (held.get("prompts") or {}).get(FOUND) or {}
    key = "pdr" if relative else "drop"
    if not summary.get("changed", True):
        return Num(None, note="the search changed nothing in the instruction")
    return _num(run, entry.get(key), held.get("n"), entry.get(f"{key}_ci95"),
                note=("PDR = 1 - A(found)/A(clean)" if relative else "A(clean) - A(found)")
                + f" on the held-out examples; interval: {entry.get(f'{key}_ci95_method')}; lower is more robust",
                caveat=label_caveat(summary, [CLEAN, FOUND]))


def search_rates(run: Run) -> list[Rate]:
    over = "held-out examples"
    return [Rate(f"acc[{CLEAN}]", search_accuracy(run, CLEAN), over),
            Rate(f"acc[{FOUND}]", search_accuracy(run, FOUND), over),
            Rate("drop", search_drop(run), over), Rate("pdr", search_drop(run, relative=True), over)]


# ------------------------------------------------------------------------------------------------------- spread

#: Spread statistics (summary key -> what it is).
SPREAD_LEVELS = {"min": "the lowest prompt's accuracy", "max": "the highest prompt's accuracy",
                 "mean": "the mean of the prompts' accuracies"}


def spread_accuracy(run: Run, name: str) -> Num:
    summary = _summary(run)
    entry = (summary.get("prompts") or {}).get(name)
    if not isinstance(entry, Mapping):
        return Num(None, note=f"no prompt {name} in this run")
    return _num(run, entry.get("acc"), summary.get("n"), entry.get("acc_ci95"),
                note=f"{entry.get('n_correct')} right", caveat=label_caveat(summary, [name]))


def spread_number(run: Run, key: str) -> Num:
    """``min``, ``max``, ``mean``, ``spread`` (max - min), ``worst_case`` or ``best_case``."""
    summary = _summary(run)
    n = summary.get("n")
    every = list(summary.get("prompts") or {})
    if key in SPREAD_LEVELS:
        which = {"min": summary.get("argmin"), "max": summary.get("argmax")}.get(key)
        return _num(run, summary.get(key), n, summary.get(f"{key}_ci95"),
                    note=f"{SPREAD_LEVELS[key]}" + (f" ({which})" if which else "")
                    + f" of {summary.get('n_prompts')}; interval: {summary.get(f'{key}_ci95_method')}",
                    caveat=label_caveat(summary, every))
    if key == "spread":
        return _num(run, summary.get("spread"), n, summary.get("spread_ci95"),
                    note=f"max - min over {summary.get('n_prompts')} prompts ({summary.get('argmax')} - "
                         f"{summary.get('argmin')}); interval: {summary.get('spread_ci95_method')}; lower is more "
                         "robust", caveat=label_caveat(summary, every))
    what = "every prompt right" if key == "worst_case" else "some prompt right"
    return _num(run, summary.get(f"{key}_acc"), n, summary.get(f"{key}_acc_ci95"),
                note=f"{summary.get(f'n_correct_{key}')} questions with {what} ({summary.get('n_prompts')} prompts)",
                caveat=label_caveat(summary, every))


def spread_rates(run: Run) -> list[Rate]:
    rates = [Rate(key, spread_number(run, key)) for key in ("worst_case", "spread", "min", "max", "mean",
                                                             "best_case")]
    return rates + [Rate(f"acc[{name}]", spread_accuracy(run, name)) for name in _summary(run).get("prompts") or {}]


# ------------------------------------------------------------------------------------------- per-example outcomes

def _columns(by_prompt: Mapping[str, Mapping[str, bool]], names: Sequence[str]) -> dict[str, list[float]] | None:
    """Example id -> each named prompt's outcome (1.0 right), for the examples every one of them holds."""
    if not names or any(name not in by_prompt for name in names):
        return None
    ids = [i for i in by_prompt[names[0]] if all(i in by_prompt[name] for name in names)]
    return {i: [float(by_prompt[name][i]) for name in names] for i in ids}


def _statistic(names: Sequence[str], rows: Mapping[str, Sequence[float]], statistic: Callable[[np.ndarray], np.ndarray],
               value: float | None) -> Outcomes | None:
    return Outcomes(rows, statistic, value) if names and rows else None


def _drop(means: np.ndarray) -> np.ndarray:
    """Rows ``(clean, found)`` -> the accuracy drop."""
    return means[:, 0] - means[:, 1]


def _spread(means: np.ndarray) -> np.ndarray:
    return means.max(axis=1) - means.min(axis=1)


_LEVELS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "min": lambda means: means.min(axis=1), "max": lambda means: means.max(axis=1),
    "mean": lambda means: means.mean(axis=1), "spread": _spread}


def _accuracy_outcomes(by_prompt: Mapping[str, Mapping[str, bool]], metric: str, value: float | None
                       ) -> Outcomes | None:
    name = metric[4:-1]
    if not (metric.startswith("acc[") and metric.endswith("]")) or name not in by_prompt:
        return None
    return Outcomes({i: (float(ok), 1.0) for i, ok in by_prompt[name].items()}, share, value)


def perturb_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    summary = _summary(run)
    by_prompt = decode(summary)
    if by_prompt is None:
        return None
    if metric.startswith("acc["):
        return _accuracy_outcomes(by_prompt, metric, value)
    if metric in ("pdr", "rb_index"):
        names = list(summary.get("prompts_in_index") or [])
    elif metric.startswith("pdr[") and metric.endswith("]"):
        scope = metric[4:-1]
        method = (summary.get("methods") or {}).get(scope)
        names = list(method.get("prompts_in_index") or []) if isinstance(method, Mapping) else [scope]
    else:
        return None
    rows = _columns(by_prompt, [CLEAN, *names])
    return _statistic(names, rows or {}, rb_index, value)


def search_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    by_prompt = decode(_summary(run))
    if by_prompt is None:
        return None
    if metric.startswith("acc["):
        return _accuracy_outcomes(by_prompt, metric, value)
    statistic = {"drop": _drop, "pdr": rb_index}.get(metric)
    rows = _columns(by_prompt, [CLEAN, FOUND])
    return _statistic([FOUND], rows or {}, statistic, value) if statistic is not None else None


def spread_outcomes(run: Run, metric: str, value: float | None) -> Outcomes | None:
    by_prompt = decode(_summary(run))
    if by_prompt is None:
        return None
    if metric.startswith("acc["):
        return _accuracy_outcomes(by_prompt, metric, value)
    names = list(by_prompt)
    rows = _columns(by_prompt, names) or {}
    if metric in ("worst_case", "best_case"):  # a share of the questions: every (some) prompt right
        pick = all if metric == "worst_case" else any
        return Outcomes({i: (float(pick(v == 1.0 for v in values)), 1.0) for i, values in rows.items()}, share,
                        value) if rows else None
    statistic = _LEVELS.get(metric)
    return _statistic(names, rows, statistic, value) if statistic is not None else None
