"""The perturbed-benchmark part of the report: accuracy per perturbed set with intervals, the RB-index per
model, and every perturbed example with its edits highlighted (method, original span, replacement).

Every accuracy says which label it counts (``hard``: read from the generation; ``soft``: argmax of the label
log-probs) and, for hard labels, how many answers had no readable label (counted wrong): two runs that differ
there are not comparable, and a 0% from ten unreadable answers is no measurement of robustness."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.evals.robustness import OUTCOME_STAGE
from robusteval.perturbations.dataset import PERTURB_STAGE as PERTURBED_STAGE
from robusteval.report.collect import ROBUSTNESS, Inputs, run_label, runs_browser
from robusteval.report.highlight import perturbation_marks, text_block
from robusteval.report.model import BarChart, Filter, Num, Section, Table
from robusteval.runs import Run

ORIGINAL = "original"
VERDICTS = {(True, False): "broken (right → wrong)", (True, True): "still right", (False, False): "still wrong",
            (False, True): "fixed (wrong → right)"}


def set_names(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(name for run in runs for name in ((run.summary or {}).get("sets") or {})))


LABEL_MODES = {"hard": "hard labels, read from the generation", "soft": "soft labels, argmax of label log-probs"}


def label_mode(run: Run) -> str:
    """Which label the run's accuracies count; runs made before ``--label-mode`` existed counted hard ones."""
    return str((run.summary or {}).get("label_mode") or "hard")


def unparsed(run: Run, name: str) -> int | None:
    """Answers without a readable label on ``name`` (a set, or ``original``), as the summary counts them."""
    value = ((run.summary or {}).get("n_unparsed") or {}).get(name)
    return value if isinstance(value, int) else None


def label_caveat(run: Run, names: Sequence[str]) -> str:
    """The cell's caveat: the label mode and, for hard labels, the unreadable answers among ``names``."""
    mode = label_mode(run)
    counts = [unparsed(run, name) for name in names]
    missing = sum(c for c in counts if c)
    if mode == "hard" and missing:
        return f"hard labels, {missing} unparsed"
    return f"{mode} labels"


def accuracy(run: Run, name: str) -> Num:
    summary = run.summary or {}
    if name == ORIGINAL:
        return Num(summary.get("acc_original"), n=summary.get("n"), ci=summary.get("acc_original_ci95"),
                   runs=(str(run.path),), percent=True, note=f"{summary.get('n_correct_original')} right",
                   caveat=label_caveat(run, [ORIGINAL]))
    entry = (summary.get("sets") or {}).get(name)
    if entry is None:
        return Num(None, note=f"no set {name} in this run")
    return Num(entry.get("acc"), n=summary.get("n"), ci=entry.get("acc_ci95"), runs=(str(run.path),), percent=True,
               note=f"{entry.get('n_correct')} right, {entry.get('n_changed')} examples changed; drop "
                    f"{entry.get('drop')}", caveat=label_caveat(run, [name]))


def rb_index(run: Run) -> Num:
    summary = run.summary or {}
    return Num(summary.get("rb_index"), n=summary.get("n"), ci=summary.get("rb_index_ci95"), runs=(str(run.path),),
               percent=True, note=f"mean relative accuracy drop over {summary.get('T')} set(s); lower is more robust",
               caveat=label_caveat(run, [ORIGINAL, *(summary.get("sets") or {})]))


def labels_cell(run: Run) -> str:
    """The table's "labels" column: the mode, and the unreadable answers per set where there are any."""
    counts = {name: unparsed(run, name) for name in [ORIGINAL, *set_names([run])]}
    missing = ", ".join(f"{name} {count}" for name, count in counts.items() if count)
    shown = LABEL_MODES.get(label_mode(run), label_mode(run))
    if not missing:
        return shown
    effect = "counted wrong" if label_mode(run) == "hard" else "not used by soft labels"
    return f"{shown}; unparsed ({effect}): {missing} of {(run.summary or {}).get('n')}"


def tables(runs: Sequence[Run]) -> list[Any]:
    names = set_names(runs)
    # The label mode is part of each run's name in the charts: bars of soft and hard labels are not comparable.
    labels = [f"{run_label(r, runs)} · {label_mode(r)} labels" for r in runs]
    rows: list[list[Num | str]] = [[label, str((run.summary or {}).get("n")), labels_cell(run),
             *(accuracy(run, name) for name in [ORIGINAL, *names]), rb_index(run)]
            for run, label in zip(runs, labels, strict=True)]
    modes = {label_mode(r) for r in runs}
    table = Table("Accuracy (%) on the original examples and on each perturbed set, and the RB-index (%)",
                  ["Run", "n", "labels", ORIGINAL, *names, "RB-index"], rows,
                  note="Runs counting different labels (hard and soft) are not comparable." if len(modes) > 1 else "")
    sets_chart = BarChart("Accuracy per perturbed set", [ORIGINAL, *names], labels,
                          {(name, label): accuracy(run, name) for run, label in zip(runs, labels, strict=True)
                           for name in [ORIGINAL, *names]}, y_label="accuracy %")
    rb_chart = BarChart("RB-index per model (mean relative accuracy drop; lower is more robust)", labels,
                        ["RB-index"], {(label, "RB-index"): rb_index(run)
                                       for run, label in zip(runs, labels, strict=True)}, y_label="RB-index %")
    return [table, sets_chart, rb_chart]


def _field_pairs(fields: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    blocks = []
    for key, field in fields.items():
        before, after = perturbation_marks(field.get("edits"), field.get("method"))
        name = "question" if key == "text" else key
        blocks.append({"pair": [[f"original {name}", text_block(field.get("original"), before)],
                                [f"perturbed {name}", text_block(field.get("perturbed"), after)]]})
    return blocks


def outcome_item(row: Mapping[str, Any], label: str) -> dict[str, Any]:
    verdict = VERDICTS[(bool(row.get("correct_original")), bool(row.get("correct")))]
    css = {"broken (right → wrong)": "sr", "still right": "ur"}.get(verdict, "muted")
    edits = [f"{e.get('original')} → {e.get('replacement')}" for f in (row.get("fields") or {}).values()
             for e in f.get("edits") or ()]
    blocks = _field_pairs(row.get("fields") or {})
    blocks.append({"rows": [["gold label", str(row.get("gold"))],
                            ["label on the original", str(row.get("label_original"))],
                            [f"label on {row.get('set')}", str(row.get("label"))],
                            ["edits", "; ".join(edits) or "none (this example is unchanged in the set)"]]})
    return {"title": f"{row.get('id')} · {row.get('set')} · {label}", "badges": [[verdict, css], [row.get("set"), "etype"]],
            "filters": {"set": str(row.get("set")), "verdict": verdict, "run": label},
            "search": " ".join(str(f.get("perturbed", "")) for f in (row.get("fields") or {}).values()),
            "blocks": blocks}


def perturbed_item(record: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A perturbed example of a run made before outcomes were stored: texts and edits, no labels."""
    perturbation = record.get("perturbation") or {}
    fields = {key: {"original": value.get("original"), "edits": value.get("edits"), "method": value.get("method"),
                    "perturbed": record.get("question") if key == "text" else (record.get("meta") or {}).get(key)}
              for key, value in (perturbation.get("fields") or {}).items()}
    method = str(perturbation.get("method"))
    return {"title": f"{record.get('id')} · {method} · {label}", "badges": [["not graded", "muted"], [method, "etype"]],
            "filters": {"set": method, "verdict": "not graded", "run": label}, "search": str(record.get("question")),
            "blocks": _field_pairs(fields)}


def example_items(run: Run, label: str) -> list[dict[str, Any]]:
    if OUTCOME_STAGE in run.stages:
        return [outcome_item(r, label) for r in run.records(OUTCOME_STAGE) if r.get("changed")]
    if PERTURBED_STAGE in run.stages:
        return [perturbed_item(r, label) for r in run.records(PERTURBED_STAGE)
                if (r.get("perturbation") or {}).get("changed")]
    return []


def robustness_section(inputs: Inputs) -> Section | None:
    runs = inputs.finished(ROBUSTNESS)
    if not runs:
        return None
    section = Section("robustness", "Perturbed benchmarks and the RB-index",
                      "Accuracy on character-, word- and sentence-level perturbed copies of a benchmark; the "
                      "RB-index is the mean relative drop from the original accuracy.")
    section.add(*tables(runs))

    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        verdicts = [v for v in [*VERDICTS.values(), "not graded"] if any(i["filters"]["verdict"] == v for i in items)]
        return [Filter("set", "Set", set_names(runs)), Filter("verdict", "Outcome", verdicts)]

    section.add(runs_browser("robustness-examples", "Perturbed examples (changed ones)", runs, example_items, filters))
    return section
