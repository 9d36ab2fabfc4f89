"""The VAR-MATH part of the report: original vs variant accuracy per model (strict and loose, with intervals
and the relative drop), and per problem each instance's values, answer, prediction and verdict.

An "original" run is a ``variants eval`` run with one instance per problem (the benchmark's own problems, ids
without a ``_<j>`` suffix) of the same model, covering the variant run's problems: its accuracy is what the
variants are compared with.

The diagnosis (:mod:`robusteval.metrics.varmath_diagnosis`): per run, its reading, the drop from the original
problems with its paired interval and each category's share with its Wilson interval (a table, a chart of the
shares per run and one of the drops). :func:`diagnosis_of` is the one place a run's diagnosis is read, for this
section, ``runs compare`` and ``runs show``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robusteval.errors import DataError
from robusteval.metrics.stats import wilson_interval
from robusteval.metrics.varmath_diagnosis import (
    ALL_CATEGORIES,
    CATEGORIES,
    LABELS,
    NO_ORIGINAL,
    VARIANT_ONLY_CATEGORIES,
    diagnose,
    is_original_problems,
    originals_from_problems,
)
from robusteval.report.collect import Inputs, model_name, run_label, runs_browser
from robusteval.report.highlight import text_block
from robusteval.report.model import BarChart, Filter, Note, Num, Section, Table
from robusteval.runs import Run
from robusteval.variants.pipeline import COMMAND as VARIANTS
from robusteval.variants.pipeline import STAGE

GRADED = "graded.jsonl"


def _problems(run: Run) -> dict[str, dict[str, Any]]:
    return {str(p["problem"]): p for p in (run.summary or {}).get("problems") or ()}


def is_original(run: Run) -> bool:
    """One instance per problem whose id is the problem's own: the benchmark as published."""
    return is_original_problems(list(_problems(run).values()))


def original_for(run: Run, originals: Sequence[Run]) -> Run | None:
    """The original run of the same model whose problems cover this run's problems, if any."""
    wanted = set(_problems(run))
    for candidate in originals:
        if candidate is not run and model_name(candidate) == model_name(run) and wanted <= set(_problems(candidate)):
            return candidate
    return None


def accuracy(run: Run, name: str) -> Num:
    """The run's strict or loose score (``name``) over its problems, with the summary's interval."""
    summary = run.summary or {}
    return Num(summary.get(name), n=summary.get("n_problems"), ci=summary.get(f"{name}_ci95"),
               runs=(str(run.path),), percent=True,
               note=f"{summary.get('n_instances')} instances, {summary.get('n_samples')} sample(s) each")


def _original_accuracy(original: Run, problems: Sequence[str]) -> Num:
    """The original run's accuracy over ``problems`` (its loose score when they are all its problems)."""
    summary = original.summary or {}
    mine = _problems(original)
    if set(problems) == set(mine):
        return Num(summary.get("loose"), n=summary.get("n_problems"), ci=summary.get("loose_ci95"),
                   runs=(str(original.path),), percent=True)
    values = [mine[p]["loose"] for p in problems]
    return Num(sum(values) / len(values) if values else None, n=len(values), runs=(str(original.path),),
               percent=True, note=f"over the {len(values)} problems the variants cover")


def diagnosis_of(run: Run, others: Sequence[Run] = ()) -> dict[str, Any] | None:
    """The run's diagnosis (:mod:`robusteval.metrics.varmath_diagnosis`): as ``variants eval`` stored it when it
    had originals; else made here against the original run of the same model among ``others`` (a run made
    before diagnoses existed, or without ``--originals``); else as stored, or variants-only. None for a run on
    the original problems or without problems."""
    summary = run.summary or {}
    if not summary.get("problems") or is_original(run):
        return None
    stored = summary.get("diagnosis")
    if stored and stored.get("n_with_original"):
        return stored
    original = original_for(run, [r for r in others if is_original(r)])
    if original is None and stored:
        return stored
    grading = summary.get("grading") or {}
    made = diagnose(summary["problems"], originals_from_problems(list(_problems(original).values()))
                    if original else None, rounds=int(grading.get("bootstrap_rounds", 1000)),
                    seed=int(grading.get("bootstrap_seed", 0)))
    return {**made, "original_run": str(original.path) if original else None}


def category_share(diagnosis: dict[str, Any] | None, name: str, run: Run) -> Num:
    """The share of the run's problems in category ``name`` (summed over the ``/no-original`` categories for
    ``NO_ORIGINAL``), with its Wilson interval; n = problems."""
    if diagnosis is None:
        return Num(None, note="no diagnosis (a run on the original problems)")
    shares = diagnosis["categories"]
    if name == NO_ORIGINAL:
        k, n = sum(shares[c]["k"] for c in VARIANT_ONLY_CATEGORIES), diagnosis["n_problems"]
        return Num(k / n if n else None, n=n, ci=wilson_interval(k, n), runs=(str(run.path),), percent=True,
                   note="problems whose original was not evaluated (categorised by their variants only)")
    share = shares[name]
    return Num(share["value"], n=share["n"], ci=share["ci95"], runs=(str(run.path),), percent=True,
               note=f"{share['k']} of {share['n']} problems: {name}")


def drop(diagnosis: dict[str, Any] | None, score: str, kind: str, run: Run) -> Num:
    """The drop from the original problems to ``score`` (loose or strict), ``kind`` absolute or relative, with
    its paired bootstrap interval; n = problems with an original."""
    found = (diagnosis or {}).get("drop") or {}
    if not found.get("n"):
        return Num(None, note="no original problems evaluated")
    stat = found["absolute" if kind == "absolute" else "relative"][score]
    runs = (str(run.path),) + ((str(diagnosis["original_run"]),) if diagnosis and diagnosis.get("original_run")
                               else ())
    how = "original − variant" if kind == "absolute" else "(original − variant) / original"
    return Num(stat["value"], n=found["n"], ci=stat["ci95"], runs=runs, percent=True,
               note=f"{how}, paired bootstrap over problems")


def diagnosis_label(diagnosis: dict[str, Any] | None) -> str:
    return LABELS[diagnosis["label"]] if diagnosis else "-"


def scores(runs: Sequence[Run]) -> tuple[Table, BarChart]:
    originals = [r for r in runs if is_original(r)]
    rows: list[list[Num | str]] = []
    values = {}
    groups: list[str] = []
    for run in runs:
        summary = run.summary or {}
        original = original_for(run, originals) if not is_original(run) else None
        diagnosis = diagnosis_of(run, runs)
        strict, loose = accuracy(run, "strict"), accuracy(run, "loose")
        base = _base(run, original, diagnosis)
        label = run_label(run, runs)
        kind = "original" if is_original(run) else "variants"
        rows.append([label, kind, str(summary.get("n_problems")), str(summary.get("n_instances")),
                     str(summary.get("n_samples")), base, strict, loose,
                     drop(diagnosis, "strict", "relative", run), drop(diagnosis, "loose", "relative", run)])
        groups.append(label)
        values[(label, "original")] = base
        values[(label, "loose")] = loose
        values[(label, "strict")] = strict
    table = Table("Accuracy (%) on the original problems and on their symbolic variants: strict = every instance "
                  "of a problem right, loose = mean instance accuracy; relative drop = (original − variant) / "
                  "original over the problems with an original (paired bootstrap interval)", ["Run", "kind", "problems", "instances", "samples", "original", "strict", "loose",
                               "strict drop", "loose drop"], rows)
    chart = BarChart("Original vs variant accuracy per run", groups, ["original", "loose", "strict"], values,
                     y_label="accuracy %")
    return table, chart


def _base(run: Run, original: Run | None, diagnosis: dict[str, Any] | None) -> Num:
    """The original accuracy the run is compared with: the diagnosis' own originals (``--originals``,
    ``--original-run``, or asked in the run) unless they are the paired original run's (then with its interval);
    the paired run's when the diagnosis has none."""
    has = bool((diagnosis or {}).get("n_with_original"))
    source = (diagnosis or {}).get("original_run")
    same = original is not None and source is not None and Path(source).resolve() == original.path.resolve()
    if has and not same:
        return _stored_original(diagnosis, run)
    if original is not None:
        return _original_accuracy(original, list(_problems(run)))
    return Num(None, note="no original run")


def _stored_original(diagnosis: dict[str, Any] | None, run: Run) -> Num:
    """The original accuracy the stored diagnosis compared with (``--originals`` / ``--original-run``)."""
    found = (diagnosis or {}).get("drop") or {}
    if not found.get("n"):
        return Num(None, note="no original run")
    runs = (str(diagnosis["original_run"]),) if diagnosis and diagnosis.get("original_run") else (str(run.path),)
    return Num(found["original"], n=found["n"], ci=found.get("original_ci95"), runs=runs, percent=True,
               note=f"over the {found['n']} problems with an original (bootstrap interval)")


#: The category columns of the diagnosis table, in order; NO_ORIGINAL sums the variants-only categories.
SHOWN_CATEGORIES = (*CATEGORIES, NO_ORIGINAL)
CATEGORY_NAMES = {"robust": "robust", "original_only": "original only", "some_variants": "some variants",
                  "unsolved": "unsolved", "variants_not_original": "variants, not original",
                  "sample_dependent": "sample-dependent", "no_variants": "no variants",
                  NO_ORIGINAL: "no original"}


def diagnoses(runs: Sequence[Run]) -> list[Any]:
    """The diagnosis table (reading, drops with paired intervals), the category table (every category's share
    with its Wilson interval: the cells ``runs compare`` shows), a chart of the shares per variants run (the
    categories some run has) and a chart of the relative drops."""
    found = [(run, d) for run in runs if (d := diagnosis_of(run, runs)) is not None]
    if not found:
        return []
    used = [c for c in SHOWN_CATEGORIES
            if any(category_share(d, c, run).value for run, d in found)] or ["robust"]
    rows: list[list[Num | str]] = []
    shares: list[list[Num | str]] = []
    charts = []
    drops: dict[tuple[str, str], Num] = {}
    for run, diagnosis in found:
        label = run_label(run, runs)
        rows.append([label, diagnosis_label(diagnosis), str(diagnosis["n_problems"]),
                     str(diagnosis["n_with_original"]), drop(diagnosis, "strict", "absolute", run),
                     drop(diagnosis, "strict", "relative", run), drop(diagnosis, "loose", "relative", run)])
        shares.append([label, *(category_share(diagnosis, c, run) for c in SHOWN_CATEGORIES)])
        charts.append(BarChart(f"Problems per category: {label}", [CATEGORY_NAMES[c] for c in used],
                               ["share of problems"],
                               {(CATEGORY_NAMES[c], "share of problems"): category_share(diagnosis, c, run)
                                for c in used}, y_label="% of problems"))
        drops[(label, "strict drop")] = drop(diagnosis, "strict", "relative", run)
        drops[(label, "loose drop")] = drop(diagnosis, "loose", "relative", run)
    out: list[Any] = [
        Table("Diagnosis: why points are lost on the variants, read from the category counts (mostly "
              "memorisation: more problems solved only in their original than with some variants or samples right; "
              "mostly unstable reasoning: the other way round; alike: as many). Drops (%) from "
              "the original problems with paired bootstrap intervals, n = problems with an original; rules and "
              "thresholds in docs/variants.md", ["Run", "diagnosis", "problems", "with original",
                                                 "strict drop (points)", "strict drop", "loose drop"], rows),
        Table("Problems per diagnosis category (% of the problems, Wilson interval): original only = memorised, "
              "some variants / sample-dependent = unstable reasoning, no original = categorised by the variants "
              "only", ["Run", *(CATEGORY_NAMES[c] for c in SHOWN_CATEGORIES)], shares),
        *charts,
    ]
    # Only runs with a defined drop (an original accuracy above 0): a chart is drawn only when it has bars.
    labelled = [label for (label, name), num in drops.items() if name == "strict drop" and num.value is not None]
    if labelled:
        out.append(BarChart("Relative drop from the original problems (paired 95% interval)", labelled,
                            ["loose drop", "strict drop"], {k: v for k, v in drops.items() if k[0] in labelled},
                            y_label="relative drop %"))
    return out


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file the run wrote beside its store (up to a line that cannot be read); a missing or
    unreadable file gives none."""
    from robusteval.data.loaders.files import iter_jsonl

    rows: list[dict[str, Any]] = []
    with contextlib.suppress(DataError):
        for _, row in iter_jsonl(path):
            rows.append(row)
    return rows


def problem_items(run: Run, label: str, categories: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One item per problem: each instance's values, question, gold answer, prediction and verdict
    (``categories``: problem id -> its diagnosis category, shown as a badge and a filter)."""
    records = {(r["id"], r.get("sample", 0)): r for r in run.records(STAGE)} if STAGE in run.stages else {}
    samples_of: dict[str, list[tuple[str, int]]] = {}
    for key in sorted(records):
        samples_of.setdefault(key[0], []).append(key)
    graded = {(g["id"], g.get("sample", 0)): g for g in _read_jsonl(run.path / GRADED)}
    values = {}
    stored, sha = run.identity.get("instances"), run.identity.get("instances_sha256")
    if not stored:
        stored, sha = (run.summary or {}).get("instances"), None
    found = run.find_file(str(stored), sha) if stored else None
    if found is not None:
        values = {str(r.get("id")): r.get("values") or {} for r in _read_jsonl(found)}
    items: list[dict[str, Any]] = []
    for pid, problem in _problems(run).items():
        n_right = sum(1 for acc in problem["instances"].values() if acc == 1)
        total = len(problem["instances"])
        result = "all right" if n_right == total else "none right" if n_right == 0 else "some right"
        category = (categories or {}).get(pid)
        blocks: list[dict[str, Any]] = []
        for iid, accuracy in problem["instances"].items():
            samples = samples_of.get(iid) or [(iid, 0)]
            first = records.get(samples[0], {})
            shown = ", ".join(f"{k} = {v}" for k, v in values.get(iid, {}).items()) or "(values not recorded)"
            rows = [["instance", f"{iid}: {shown}"], ["gold answer", str(first.get("gold", "?"))],
                    ["instance accuracy", f"{accuracy:.0%} over {len(samples)} sample(s)"]]
            for key in samples:
                grade = graded.get(key, {})
                verdicts: dict[Any, str] = {True: "right", False: "wrong"}
                verdict = verdicts.get(grade.get("correct"), "not graded")
                rows.append([f"sample {key[1]}", f"prediction {grade.get('extracted')!s}: {verdict}"])
            blocks.append({"text": text_block(first.get("question", "")), "label": f"question ({iid})"})
            blocks.append({"rows": rows})
            completions = [{"text": text_block(records[k].get("completion", "")), "label": f"sample {k[1]} completion"}
                           for k in samples if k in records]
            if completions:
                blocks.append({"more": f"model output for {iid}", "blocks": completions})
        items.append({
            "title": f"{pid} · {label}",
            "badges": [[f"strict {problem['strict']:.0%}", "ur" if problem["strict"] == 1 else "wr"],
                       [f"loose {problem['loose']:.0%}", "muted"]],
            "filters": {"result": result, "run": label, **({"category": category} if category is not None else {})},
            "search": pid, "blocks": blocks,
        })
        if category is not None:
            items[-1]["badges"].append([category, "muted"])
    return items


def variants_section(inputs: Inputs) -> Section | None:
    runs = inputs.finished(VARIANTS)
    if not runs:
        return None
    section = Section("varmath", "VAR-MATH: symbolic variants",
                      "Each problem becomes a template whose numbers vary; a model gets strict credit for a "
                      "problem only if it solves every instance.")
    table, chart = scores(runs)
    section.add(table, chart, *diagnoses(runs))
    if not any(is_original(r) for r in runs):
        section.add(Note("No run on the original problems was given: evaluate them too (`robusteval variants "
                         "eval` on the originals, one instance per problem) to see the relative drop."))
    found = {run.path: diagnosis_of(run, runs) for run in runs}
    categories = {path: {r["problem"]: r["category"] for r in d["problems"]} for path, d in found.items() if d}

    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        chosen = [Filter("result", "Instances right", ["all right", "some right", "none right"])]
        present = {item["filters"].get("category") for item in items}
        shown = [c for c in ALL_CATEGORIES if c in present]
        return chosen + ([Filter("category", "Diagnosis category", shown)] if shown else [])

    section.add(runs_browser("varmath-problems", "Problems and their instances", runs,
                             lambda run, label: problem_items(run, label, categories.get(run.path)), filters))
    return section
