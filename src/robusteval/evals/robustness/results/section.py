"""The perturbed-benchmark part of the report: accuracy per perturbed set with intervals, the RB-index per
model, and every perturbed example with its edits highlighted (method, original span, replacement).

Every accuracy says which label it counts (``hard``: read from the generation; ``soft``: argmax of the label
log-probs) and, for hard labels, how many answers had no readable label (counted wrong): two runs that differ
there are not comparable, and a 0% from ten unreadable answers is no measurement of robustness."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.evals.robustness import COMMAND as ROBUSTNESS
from robusteval.evals.robustness import OUTCOME_STAGE
from robusteval.metrics.robustness import excluded_lines, index_note
from robusteval.perturbations.dataset import PERTURB_STAGE as PERTURBED_STAGE
from robusteval.report.collect import Inputs, run_label, runs_browser
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
                    f"{entry.get('drop')} {entry.get('drop_ci95')}",
               caveat="; ".join(filter(None, [label_caveat(run, [name]),
                                              "left out of the RB-index" if entry.get("in_index") is False else "",
                                              preservation(run, name), measured(entry)])))


def rb_index(run: Run) -> Num:
    summary = run.summary or {}
    left_out = summary.get("sets_excluded") or []
    return Num(summary.get("rb_index"), n=summary.get("n"), ci=summary.get("rb_index_ci95"), runs=(str(run.path),),
               percent=True, note=f"mean relative accuracy drop {index_note(summary)}; lower is more robust"
               + "".join(f"; {line}" for line in excluded_lines(summary)),
               caveat="; ".join(filter(None, [label_caveat(run, [ORIGINAL, *(summary.get("sets_in_index") or
                                                                              summary.get("sets") or {})]),
                                              f"left out: {', '.join(left_out)}" if left_out else ""])))


def preservation(run: Run, name: str) -> str:
    """``same meaning 41/50 = 82% [69, 90]``: the share of set ``name``'s labelled edits a person judged the
    same, with n and its Wilson interval; "" where none of its edits is labelled."""
    from robusteval.evals.robustness.preservation import preservation_text

    entry = ((run.summary or {}).get("sets") or {}).get(name) or {}
    return preservation_text(entry.get("preservation") or {})


def measured(entry: Mapping[str, Any]) -> str:
    """The set's method measured on its labelled sample, where that is above one edit in ten or not measured
    (``method's labelled sample: not same 5/13 = 38% [18, 64]``); "" otherwise or for a file set."""
    from robusteval.perturbations.measured import preservation_text

    block = entry.get("measured_preservation")
    if not block or (block.get("measured") and not block.get("above_line")):
        return ""
    return f"method's labelled sample: {preservation_text(block)}"


def preservation_num(run: Run, name: str) -> Num:
    """The same share as a number (value, n, Wilson interval) for tables that rank or chart; empty where none
    of the set's edits is labelled."""
    block = ((((run.summary or {}).get("sets") or {}).get(name) or {}).get("preservation")) or {}
    same = block.get("same") or {}
    if not block.get("n"):
        return Num(None, note="no labelled edit")
    return Num(same.get("value"), n=block["n"], ci=same.get("ci95"), runs=(str(run.path),), percent=True,
               note=preservation(run, name))


def preserved_rb_index(run: Run) -> Num:
    """The RB-index over the edits labelled same meaning (``--preserved-only``), or an empty Num."""
    from robusteval.metrics.robustness import PRESERVED_LABEL

    block = (run.summary or {}).get("preserved_only") or {}
    if not block:
        return Num(None, note="no --preserved-only")
    return Num(block.get("rb_index"), n=block.get("n"), ci=block.get("rb_index_ci95"), runs=(str(run.path),),
               percent=True, note=f"{PRESERVED_LABEL} (n={block.get('n')}, over {block.get('T')} set(s): "
                                  f"{', '.join(block.get('sets_in_index') or [])}); the headline RB-index is "
                                  "over every example")


def labelled(runs: Sequence[Run]) -> bool:
    """Whether some run has a set with labelled edits."""
    return any(entry.get("preservation") for run in runs for entry in ((run.summary or {}).get("sets") or {}).values())


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
    out: list[Any] = [table, sets_chart, rb_chart]
    if labelled(runs):  # measured preservation, where a person labelled the sets' edits
        preserved = any((run.summary or {}).get("preserved_only") for run in runs)
        rows = [[label, *(preservation(run, name) for name in names),
                 *([preserved_rb_index(run)] if preserved else [])] for run, label in zip(runs, labels, strict=True)]
        out.insert(1, Table("Meaning preservation (%): per set, the share of its labelled edits a person judged "
                            "same meaning (n: labelled edits)", ["Run", *names,
                                                                 *(["RB-index over meaning-preserving edits"]
                                                                   if preserved else [])], rows,
                            note="Wilson 95% intervals; each edit counted once, with its last label; a set with "
                                 "no labelled edit is empty. The RB-index over meaning-preserving edits averages "
                                 "each set's relative drop over the examples whose every edit was judged the "
                                 "same; it does not replace the RB-index above."))
    return out


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
