"""Why a model loses points on VAR-MATH variants: per-problem categories, the original -> loose -> strict drop
with paired intervals, and a one-line diagnosis (the paper's strict-vs-loose reading, made explicit).

Inputs are what a ``variants eval`` summary holds: its ``problems`` rows (each instance's accuracy = share of
its K samples graded right) and, optionally, the original problems' accuracy per problem id (an original run
has one instance per problem whose id is the problem's own). An instance of the variants run whose id *is* its
problem id is that problem's original, asked in the same run (VAR-MATH's published files keep untemplated
problems so); the other instances are the problem's variants.

An instance is *right* when every sample is right (accuracy 1), *wrong* when none is (0), *mixed* otherwise
(K > 1 only). Categories of a problem, first rule that applies:

=========================  ==========================================================================
``no_variants``            the problem has no variant instance (its only instance is the original)
``sample_dependent``       some instance (a variant, or the original) is mixed: correctness changes
                           between samples of one instance
``robust``                 original right, every variant right
``original_only``          original right, no variant right (the memorisation signature)
``some_variants``          some variants right, not all (original right or wrong: unstable reasoning)
``unsolved``               original wrong, no variant right
``variants_not_original``  original wrong, every variant right (a harder or mis-graded original)
=========================  ==========================================================================

A problem whose original was not evaluated is categorised by its variants only, under a name that says so
(suffix ``/no-original``): ``all_variants/no-original``, ``some_variants/no-original``,
``no_variant/no-original``, ``sample_dependent/no-original``. Every category's share is a Wilson proportion
over all problems (:func:`robusteval.metrics.stats.proportion`), so the shares add up to 1.

The drop is measured on the problems that have an original: original accuracy (mean over those problems),
loose and strict (the run's own per-problem scores, :mod:`robusteval.metrics.variants`); absolute drops
(original - score) and relative drops ((original - score) / original), each with a seeded percentile bootstrap
that resamples problems *with their original and variant scores together* (paired: the interval of a
difference, not two intervals). Where every resample gives the same value (every original right, say), the
bootstrap collapses to a point; the interval then falls back to one of positive width: Wilson for the original
accuracy, Newcombe's paired score interval for an absolute drop, the ratio box of
:func:`robusteval.metrics.stats.relative_drop_interval` for a relative drop (``*_method`` names which). ``drop = (original - loose) + (loose - strict)``: the first part is lost on
single variants (memorisation), the second to inconsistency across variants (unstable reasoning).

That split (``memorisation_share``, the first part's share) says where points go, not why: loose also loses the
single variants a ``some_variants`` problem misses, which is unstable reasoning. The reading below counts the
categories instead.

The diagnosis, first rule that applies (thresholds are :class:`DiagnosisThresholds`, defaults below):

1. original accuracy < ``min_original`` (0.2): **cannot solve the originals** (nothing to lose);
   without originals, loose < ``min_original``: **cannot solve the variants**;
2. relative strict drop <= ``robust_max_drop`` (0.1): **robust**; without originals, strict >= (1 -
   ``robust_max_drop``) x loose;
3. with originals, from the category counts (so the reading never contradicts the table): M problems are
   ``original_only`` (the memorisation signature) and U are ``some_variants`` or ``sample_dependent``
   (correctness changes across variants or samples: unstable reasoning). **mostly memorisation** when M > U
   and M >= ``memorisation_share`` (0.5) x (M + U); **mostly unstable reasoning** when U > M and
   U >= ``memorisation_share`` x (M + U); else **memorisation and unstable reasoning alike** (a tie, or neither
   reaches the share). Without originals the split cannot be made: **unstable reasoning (originals not
   evaluated)**.

Each "at or under" / "reaches" compares the exact shares the counts give: the float noise of the arithmetic
(10 of 12 originals right, 9 kept: a relative drop of exactly 10% computes as 0.10000000000000003) is rounded
off first (:func:`at_most`), so a drop at the bound is robust whatever the counts.

A run whose every problem is ``no_variants`` (a run on the original problems) is labelled **no variants**.
Fewer than ``min_problems`` (10) problems adds "few problems" to the line: the label is then a weak reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from robusteval.config import ConfigError
from robusteval.metrics.stats import (
    NEWCOMBE_PAIRED,
    RATIO_BOX,
    WILSON,
    paired_difference_interval,
    proportion,
    relative_drop_interval,
    robust_interval,
    wilson_interval,
    z_of_level,
)

NO_ORIGINAL = "/no-original"
#: Categories of problems whose original was evaluated, in the order tables show them.
CATEGORIES = ("robust", "original_only", "some_variants", "unsolved", "variants_not_original", "sample_dependent",
              "no_variants")
#: Categories of problems whose original was not evaluated (categorised by their variants only).
VARIANT_ONLY_CATEGORIES = tuple(f"{name}{NO_ORIGINAL}" for name in
                                ("all_variants", "some_variants", "no_variant", "sample_dependent"))
ALL_CATEGORIES = CATEGORIES + VARIANT_ONLY_CATEGORIES

#: Below this original accuracy (or loose score, without originals) there is nothing to diagnose.
MIN_ORIGINAL_ACCURACY = 0.2
#: A relative strict drop at or under this is "robust".
ROBUST_MAX_DROP = 0.1
#: The share of the problems showing a cause (original_only + some_variants + sample_dependent) that one cause
#: must reach, besides outnumbering the other, for "mostly memorisation" / "mostly unstable reasoning".
MEMORISATION_SHARE = 0.5
#: The categories that show each cause (what the reading counts; a problem whose original was not evaluated
#: has a ``/no-original`` category and counts for neither).
MEMORISATION_CATEGORIES = ("original_only",)
UNSTABLE_CATEGORIES = ("some_variants", "sample_dependent")
#: Fewer problems than this: the line says the reading is weak.
MIN_PROBLEMS = 10

LABELS = {"originals": "cannot solve the originals", "variants": "cannot solve the variants",
          "robust": "robust", "memorisation": "mostly memorisation", "unstable": "mostly unstable reasoning",
          "mixed": "memorisation and unstable reasoning alike",
          "unstable_no_original": "unstable reasoning (originals not evaluated)", "empty": "no problems",
          "no_variants": "no variants (a run on the original problems)"}


@dataclass(frozen=True)
class DiagnosisThresholds:
    """The thresholds of the one-line diagnosis (see the module docstring); shares in [0, 1]."""

    min_original: float = MIN_ORIGINAL_ACCURACY
    robust_max_drop: float = ROBUST_MAX_DROP
    memorisation_share: float = MEMORISATION_SHARE
    min_problems: int = MIN_PROBLEMS

    def __post_init__(self) -> None:
        for name in ("min_original", "robust_max_drop", "memorisation_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ConfigError(self, name, f"must be a share in [0, 1], got {value!r}")
        if isinstance(self.min_problems, bool) or not isinstance(self.min_problems, int) or self.min_problems < 0:
            raise ConfigError(self, "min_problems", f"must be a whole number >= 0, got {self.min_problems!r}")


def outcome(accuracy: float) -> str:
    """``right`` (every sample right), ``wrong`` (none) or ``mixed`` (K > 1 samples that disagree)."""
    return "right" if accuracy >= 1 else "wrong" if accuracy <= 0 else "mixed"


def categorise(variants: Sequence[float], original: float | None) -> str:
    """The category of a problem from its variant instances' accuracies and its original's (None: not
    evaluated); see the module docstring for the rules."""
    if not variants:
        return "no_variants"
    shown = [outcome(a) for a in variants]
    suffix = NO_ORIGINAL if original is None else ""
    if "mixed" in shown or (original is not None and outcome(original) == "mixed"):
        return "sample_dependent" + suffix
    n_right = shown.count("right")
    if 0 < n_right < len(shown):
        return "some_variants" + suffix
    if original is None:
        return ("all_variants" if n_right else "no_variant") + NO_ORIGINAL
    if outcome(original) == "right":
        return "robust" if n_right else "original_only"
    return "variants_not_original" if n_right else "unsolved"


def split_problem(problem: Mapping[str, Any]) -> tuple[float | None, list[float]]:
    """(accuracy of the original asked in the run, if any; accuracies of the variant instances)."""
    pid = str(problem["problem"])
    instances = problem.get("instances") or {}
    own = instances.get(pid)
    return (None if own is None else float(own)), [float(a) for iid, a in instances.items() if iid != pid]


def problem_categories(problems: Sequence[Mapping[str, Any]], originals: Mapping[str, float] | None = None
                       ) -> list[dict[str, Any]]:
    """One row per problem: ``problem``, ``category``, ``original`` (its accuracy, None when not evaluated),
    ``original_from`` (``"original run"``, ``"this run"`` or None), ``strict`` and ``loose``.

    ``problems``: a ``variants eval`` summary's ``problems``; ``originals``: problem id -> accuracy on the
    original problem (an original run's per-problem ``loose``). An original asked in this run (the instance with
    the problem's own id) is used where ``originals`` has none."""
    rows = []
    for problem in problems:
        pid = str(problem["problem"])
        own, variants = split_problem(problem)
        given = None if originals is None else originals.get(pid)
        original, source = (float(given), "original run") if given is not None else (
            (own, "this run") if own is not None else (None, None))
        rows.append({"problem": pid, "category": categorise(variants, original), "original": original,
                     "original_from": source, "strict": float(problem["strict"]), "loose": float(problem["loose"])})
    return rows


def category_shares(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every category's share of the problems (all of them, ``ALL_CATEGORIES``) with its Wilson interval."""
    n = len(rows)
    return {name: proportion(sum(1 for r in rows if r["category"] == name), n) for name in ALL_CATEGORIES}


def _stat(value: float | None, ci: Sequence[float] | None) -> dict[str, Any]:
    return {"value": value, "ci95": list(ci) if ci is not None else None}


def drops(rows: Sequence[Mapping[str, Any]], *, rounds: int = 1000, seed: int = 0, level: float = 0.95
          ) -> dict[str, Any]:
    """Original (with ``original_ci95``), loose and strict over the problems that have an original, and the drops
    from the original to each (absolute and relative), with paired bootstrap intervals (``rounds`` resamples of
    problems, seeded)."""
    paired = [r for r in rows if r["original"] is not None]
    data = np.array([[r["original"], r["loose"], r["strict"]] for r in paired], dtype=float).reshape(-1, 3)
    out: dict[str, Any] = {"n": len(paired), "original": None, "original_ci95": None, "original_ci95_method": None,
                           "loose": None, "strict": None,
                           "absolute": {}, "relative": {}, "memorisation_share": None,
                           "bootstrap": {"rounds": rounds, "seed": seed, "level": level,
                                         "resamples": "problems, original and variant scores together (paired)"}}
    if not paired:
        return out
    means = data.mean(axis=0)
    out.update(original=float(means[0]), loose=float(means[1]), strict=float(means[2]))

    def absolute(column: int) -> Any:
        return lambda d: d[:, 0].mean() - d[:, column].mean()

    def relative(column: int) -> Any:
        # nan (dropped by bootstrap_ci) where a resample's original accuracy is 0: the ratio is undefined.
        return lambda d: (d[:, 0].mean() - d[:, column].mean()) / d[:, 0].mean() if d[:, 0].mean() else np.nan

    def interval(statistic: Any, fallback: Any, method: str) -> tuple[list[float] | None, str | None]:
        # The same seed for every statistic: all are computed on the same resamples of problems. Where the
        # bootstrap collapses (every problem alike), an analytic interval of positive width (metrics.stats).
        return robust_interval(data, statistic, fallback, method, seed=seed, n_resamples=rounds, level=level)

    n = data.shape[0]
    out["original_ci95"], out["original_ci95_method"] = interval(
        lambda d: d[:, 0].mean(), lambda: wilson_interval(float(means[0]) * n, n, z_of_level(level)), WILSON)
    for name, column in (("loose", 1), ("strict", 2)):
        ci, method = interval(absolute(column),
                              lambda c=column: paired_difference_interval(data[:, 0], data[:, c], level=level),
                              NEWCOMBE_PAIRED)
        out["absolute"][name] = {**_stat(float(absolute(column)(data)), ci), "ci95_method": method}
        value = float(relative(column)(data))
        ci, method = (interval(relative(column),
                               lambda c=column: relative_drop_interval(data[:, 0], data[:, c], level=level), RATIO_BOX)
                      if not np.isnan(value) else (None, None))
        out["relative"][name] = {**_stat(None if np.isnan(value) else value, ci), "ci95_method": method}
    lost = means[0] - means[2]
    out["memorisation_share"] = float((means[0] - means[1]) / lost) if lost > 0 else None
    return out


#: Decimals kept when a computed share meets a threshold: float noise (~1e-16) is rounded away; a real gap
#: between a share of counts and a threshold is many orders larger.
BOUND_DECIMALS = 12


def at_most(value: float, bound: float) -> bool:
    """``value <= bound`` for shares computed from counts, the float noise of their arithmetic ignored."""
    return round(value - bound, BOUND_DECIMALS) <= 0


def causes(counts: Mapping[str, int]) -> dict[str, int]:
    """How many problems show each cause: ``memorisation`` (``original_only``) and ``unstable``
    (``some_variants`` or ``sample_dependent``), from the category counts."""
    return {"memorisation": sum(counts.get(name, 0) for name in MEMORISATION_CATEGORIES),
            "unstable": sum(counts.get(name, 0) for name in UNSTABLE_CATEGORIES)}


def label(drop: Mapping[str, Any], loose: float | None, strict: float | None,
          thresholds: DiagnosisThresholds = DiagnosisThresholds(), counts: Mapping[str, int] | None = None) -> str:
    """The diagnosis key (``LABELS``) from the drop (with originals) or the run's loose and strict (without);
    with originals, memorisation against unstable reasoning is read from the category ``counts`` (rule 3 of the
    module docstring), never from the drop's split."""
    if drop["n"]:
        if drop["original"] < thresholds.min_original:
            return "originals"
        relative = drop["relative"]["strict"]["value"]
        if relative is not None and at_most(relative, thresholds.robust_max_drop):
            return "robust"
        found = causes(counts or {})
        memorised, unstable = found["memorisation"], found["unstable"]
        lost = memorised + unstable
        if not lost:  # no problem shows a cause: then no problem lost points (kept for safety)
            return "robust"
        if memorised > unstable and at_most(thresholds.memorisation_share * lost, memorised):
            return "memorisation"
        if unstable > memorised and at_most(thresholds.memorisation_share * lost, unstable):
            return "unstable"
        return "mixed"
    if loose is None or strict is None:
        return "empty"
    if loose < thresholds.min_original:
        return "variants"
    return "robust" if at_most(loose - strict, thresholds.robust_max_drop * loose) else "unstable_no_original"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _interval(stat: Mapping[str, Any]) -> str:
    ci = stat.get("ci95")
    return f" [95% CI {ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci else ""


def diagnosis_line(diagnosis: Mapping[str, Any]) -> str:
    """``mostly memorisation: original 80.0% -> loose 30.0% -> strict 10.0% on 12 problems; strict drop 87.5%
    relative [95% CI ...], 70.0 points [...]; 7/12 original only, ...``."""
    drop, counts = diagnosis["drop"], diagnosis["counts"]
    n = diagnosis["n_problems"]
    text = LABELS[diagnosis["label"]]
    if diagnosis["label"] == "no_variants":
        return f"{text}: each of the {n} problems has only its original instance"
    if drop["n"]:
        relative = drop["relative"]["strict"]
        relative_text = (f"{_pct(relative['value'])} relative{_interval(relative)}" if relative["value"] is not None
                         else "relative undefined (original 0%)")
        text += (f": original {_pct(drop['original'])} -> loose {_pct(drop['loose'])} -> strict "
                 f"{_pct(drop['strict'])} on {drop['n']} problems with an original; strict drop {relative_text}, "
                 f"{drop['absolute']['strict']['value'] * 100:.1f} points{_interval(drop['absolute']['strict'])}")
    else:
        text += f": loose {_pct(diagnosis['loose'])}, strict {_pct(diagnosis['strict'])} (no original evaluated)"
    shown = [f"{counts[name]}/{n} {name}" for name in ALL_CATEGORIES if counts.get(name)]
    if shown:
        text += "; " + ", ".join(shown)
    if n < diagnosis["thresholds"]["min_problems"]:
        text += f" (few problems: n = {n} < {diagnosis['thresholds']['min_problems']}, a weak reading)"
    return text


def diagnose(problems: Sequence[Mapping[str, Any]], originals: Mapping[str, float] | None = None, *,
             thresholds: DiagnosisThresholds = DiagnosisThresholds(), rounds: int = 1000, seed: int = 0,
             level: float = 0.95) -> dict[str, Any]:
    """The whole diagnosis of a variants run (what ``variants eval`` writes as ``summary["diagnosis"]``).

    ``problems``: the summary's ``problems`` rows; ``originals``: problem id -> original accuracy (None or a
    missing id: not evaluated, unless the run asked the original itself). Returns ``label`` (a ``LABELS`` key),
    ``line`` (the one-line reading), ``categories`` (share, k, n, Wilson interval of every category),
    ``counts``, ``causes`` (:func:`causes`: what the reading weighs), ``drop`` (:func:`drops`), ``n_problems``, ``n_with_original``, the run's ``loose`` and
    ``strict``, ``thresholds`` and one row per problem (``problems``)."""
    rows = problem_categories(problems, originals)
    n = len(rows)
    shares = category_shares(rows)
    drop = drops(rows, rounds=rounds, seed=seed, level=level)
    loose = sum(r["loose"] for r in rows) / n if n else None
    strict = sum(r["strict"] for r in rows) / n if n else None
    only_originals = n > 0 and shares["no_variants"]["k"] == n  # nothing varied: nothing to diagnose
    counts = {name: share["k"] for name, share in shares.items()}
    out: dict[str, Any] = {
        "label": "no_variants" if only_originals else label(drop, loose, strict, thresholds, counts),
        "n_problems": n, "n_with_original": drop["n"], "loose": loose, "strict": strict, "categories": shares,
        "counts": counts, "causes": causes(counts), "drop": drop,
        "thresholds": asdict(thresholds), "problems": rows,
    }
    out["line"] = diagnosis_line(out)
    return out


def is_original_problems(problems: Sequence[Mapping[str, Any]]) -> bool:
    """One instance per problem whose id is the problem's own: a run on the benchmark as published."""
    return bool(problems) and all(list(p.get("instances") or {}) == [str(p["problem"])] for p in problems)


def originals_from_problems(problems: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Problem id -> accuracy, from an original run's ``problems`` rows (one instance per problem)."""
    return {str(p["problem"]): float(p["loose"]) for p in problems}
