"""Strict and loose VAR-MATH scores, with seeded bootstrap confidence intervals.

Instances group into problems by the id prefix before the last ``_<j>`` (``"2024-I-8_3"`` -> ``"2024-I-8"``;
an id without such a suffix is a problem of its own). With ``K`` graded samples per instance:

* accuracy of an instance = share of its samples that are right;
* **loose** = mean over problems of the mean instance accuracy of the problem (VAR-MATH's loose metric);
* **strict** = mean over problems of the product of its instance accuracies, i.e. the expected
  all-or-nothing score when every instance is answered once. With K = 1 this is exactly "share of problems
  whose instances are all right"; for K > 1 it does not depend on how samples of different instances are
  paired up (sample 0 of one instance has nothing to do with sample 0 of another).

Confidence intervals: percentile bootstrap with a fixed seed. Each round resamples problems with replacement
and, for every instance, one of its samples at random, then computes strict and loose on that draw. Where every
resample agrees (all problems scored 0, or all 1) the bootstrap's zero-width interval is replaced by the Wilson
score interval over the problems (named in ``bootstrap.wilson``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robusteval.metrics.stats import wilson_interval

_SUFFIX_RE = re.compile(r"^(.*)_(\d+)$")


def problem_id(instance_id: str) -> str:
    """``"12_3"`` -> ``"12"``; ``"2024-II-4_0"`` -> ``"2024-II-4"``; ``"41"`` (no suffix) -> ``"41"``."""
    match = _SUFFIX_RE.match(instance_id)
    return match.group(1) if match and match.group(1) else instance_id


def group_problems(instance_ids: Sequence[str]) -> dict[str, list[str]]:
    """Problem id -> its instance ids, both in first-seen order."""
    groups: dict[str, list[str]] = {}
    for iid in instance_ids:
        groups.setdefault(problem_id(iid), []).append(iid)
    return groups


def variant_scores(
    correct: Mapping[str, Sequence[bool]],
    *,
    instance_order: Sequence[str] | None = None,
    bootstrap_rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ci: bool = True,
) -> dict[str, Any]:
    """Scores from ``{instance id: [correct per sample]}`` (an empty list counts as one wrong sample).

    Returns strict, loose, instance_accuracy, n_problems, n_instances, n_samples (max K), strict_ci95 and
    loose_ci95 (None when ``ci`` is false or there is nothing to resample), and one row per problem.
    """
    ids = list(instance_order) if instance_order is not None else list(correct)
    groups = group_problems(ids)
    samples = {iid: [bool(x) for x in correct.get(iid, [])] or [False] for iid in ids}
    accuracy = {iid: sum(s) / len(s) for iid, s in samples.items()}
    per_problem: list[dict[str, Any]] = []
    for pid, members in groups.items():
        accs = [accuracy[i] for i in members]
        per_problem.append(
            {
                "problem": pid,
                "n_instances": len(members),
                "strict": math.prod(accs),
                "loose": sum(accs) / len(accs),
                "instances": {i: accuracy[i] for i in members},
            }
        )
    n_problems = len(per_problem)
    k_max = max((len(s) for s in samples.values()), default=0)
    out: dict[str, Any] = {
        "strict": sum(p["strict"] for p in per_problem) / n_problems if n_problems else None,
        "loose": sum(p["loose"] for p in per_problem) / n_problems if n_problems else None,
        "instance_accuracy": sum(accuracy.values()) / len(accuracy) if accuracy else None,
        "n_problems": n_problems,
        "n_instances": len(ids),
        "n_samples": k_max,
        "strict_ci95": None,
        "loose_ci95": None,
        "bootstrap": None,
        "problems": per_problem,
    }
    if ci and n_problems > 0 and bootstrap_rounds > 0:
        degenerate = []
        for name, interval in zip(("strict", "loose"), _bootstrap(groups, samples, bootstrap_rounds, seed, level),
                                  strict=True):
            if interval[0] == interval[1]:
                # Every resample agreed (every problem scored 0, or every one 1): a percentile bootstrap then
                # claims certainty, [0, 0] at 0 of 3. A score is a mean of per-problem values in [0, 1], whose
                # variance is at most mean * (1 - mean), so the Wilson score interval over the problems bounds it.
                interval = list(wilson_interval(out[name] * n_problems, n_problems) or interval)
                degenerate.append(name)
            out[f"{name}_ci95"] = interval
        out["bootstrap"] = {
            "rounds": bootstrap_rounds,
            "seed": seed,
            "level": level,
            "resamples": "problems, and one sample per instance",
            "wilson": degenerate,  # the scores whose resamples all agreed: their interval is Wilson's
        }
    return out


def _bootstrap(
    groups: Mapping[str, Sequence[str]],
    samples: Mapping[str, Sequence[bool]],
    rounds: int,
    seed: int,
    level: float,
) -> tuple[list[float], list[float]]:
    problems = list(groups)
    n_p = len(problems)
    m = max(len(groups[p]) for p in problems)
    k = max(len(s) for s in samples.values())
    # Dense arrays: outcome[p, i, s], how many samples each instance has, and which instance slots exist.
    outcome = np.zeros((n_p, m, k), dtype=bool)
    n_samples = np.ones((n_p, m), dtype=np.int64)
    present = np.zeros((n_p, m), dtype=bool)
    for a, pid in enumerate(problems):
        for b, iid in enumerate(groups[pid]):
            row = samples[iid]
            outcome[a, b, : len(row)] = row
            n_samples[a, b] = len(row)
            present[a, b] = True
    rng = np.random.default_rng(seed)
    strict = np.empty(rounds)
    loose = np.empty(rounds)
    chunk = max(1, 2_000_000 // max(1, n_p * m))  # bound memory for big benchmarks
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        pick_p = rng.integers(0, n_p, size=(size, n_p))
        draw = rng.random((size, n_p, m))
        pick_s = np.floor(draw * n_samples[pick_p]).astype(np.int64)  # uniform over each instance's samples
        slot = np.arange(m)[None, None, :]
        got = outcome[pick_p[..., None], slot, pick_s]
        mask = present[pick_p]
        all_right = np.all(got | ~mask, axis=2)
        mean_right = (got & mask).sum(axis=2) / mask.sum(axis=2)
        strict[start : start + size] = all_right.mean(axis=1)
        loose[start : start + size] = mean_right.mean(axis=1)
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    return [float(x) for x in np.quantile(strict, q)], [float(x) for x in np.quantile(loose, q)]
