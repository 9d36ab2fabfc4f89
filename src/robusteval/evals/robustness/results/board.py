"""A perturbed benchmark's leaderboard (``runs compare``): one row per run, ranked by the RB-index, and its paper
tables (``runs compare --format latex``: the label mode said in the caption, accuracy per set, measured
preservation, unread labels)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from robusteval.evals.robustness import COMMAND
from robusteval.evals.robustness.results import section as perturbed
from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.compare import Board, Leaderboard, Row
from robusteval.report.latex_tex import Tex, TexTable
from robusteval.runs import Run


def unparsed_text(summary: Mapping[str, Any]) -> str:
    """A robustness run's unread labels per set, ``original 0/10, C-pinyin 10/10`` (they count as wrong)."""
    counts = summary.get("n_unparsed") or {}
    # The original first, then the sets in the run's order (summary.json may hold the counts sorted by name).
    names = dict.fromkeys([perturbed.ORIGINAL, *(summary.get("sets") or {}), *counts])
    return ", ".join(f"{name} {counts[name]}/{summary.get('n')}" for name in names if name in counts) or "not recorded"


def preservation_text(run: Run) -> str:
    """Each labelled set's accuracy and measured preservation, ``C-homophone: acc 58.3% [32.0, 80.7] n=12,
    same meaning 6/10 = 60% [31, 83]`` ("; " between sets; "" where no edit is labelled)."""
    from robusteval.metrics.formatting import format_rate

    summary = run.summary or {}
    parts = []
    for name, entry in (summary.get("sets") or {}).items():
        shown = perturbed.preservation(run, name)
        if shown:
            acc = format_rate(entry.get("acc"), entry.get("acc_ci95"), scale=100, digits=1, unit="%",
                              n=summary.get("n"))
            parts.append(f"{name}: acc {acc}, {shown}")
    return "; ".join(parts)


def rows(run: Run) -> list[Row]:
    summary = run.summary or {}
    row: Row = {"model": model_name(run), "dataset": dataset_name(run), "sets": str(summary.get("sets_spec")),
                "label_mode": str(summary.get("label_mode") or "?"), "n": str(summary.get("n")),
                "unparsed": unparsed_text(summary),
                "acc_original": perturbed.accuracy(run, perturbed.ORIGINAL), "rb_index": perturbed.rb_index(run),
                "preservation": preservation_text(run)}
    if summary.get("preserved_only"):  # beside the headline RB-index, never in its place
        row["rb_index_preserved"] = perturbed.preserved_rb_index(run)
    return [row]


def tex_tables(board: Leaderboard, inputs: Inputs, main: TexTable) -> list[TexTable]:
    """The leaderboard's table with its label mode said (before the closing note), then the per-set tables."""
    modes = {str(row.get("label_mode")) for row in board.rows if row.get("label_mode")}
    if modes:
        mode = ("Label mode: " + ", ".join(f"{m} ({perturbed.LABEL_MODES.get(m, m)})" for m in sorted(modes))
                + ".")
        main = replace(main, notes=[*main.notes[:-1], mode, *main.notes[-1:]])
    return [main, *set_tables(board, inputs, main.comments)]


def set_tables(board: Leaderboard, inputs: Inputs, comments: Sequence[str]) -> list[TexTable]:
    """A perturbed benchmark's accuracy on each set, one column per set, and its unparsed labels when some
    answer had none."""
    by_path = {str(run.path): run for run in inputs.of(COMMAND)}
    runs = [by_path[str(row["run"])] for row in board.rows if str(row.get("run")) in by_path]
    names = [perturbed.ORIGINAL, *perturbed.set_names(runs)]
    out = [TexTable("Perturbed benchmarks: accuracy (%) on the original and on each perturbed set",
                    ["Model", *names], [[model_name(run), *(perturbed.accuracy(run, n) for n in names)]
                                        for run in runs],
                    notes=["Each number: value [95% interval]."], comments=comments)]
    counts = [[model_name(run), str((run.summary or {}).get("n")),
               *("" if perturbed.unparsed(run, n) is None else str(perturbed.unparsed(run, n)) for n in names)]
              for run in runs]
    if perturbed.labelled(runs):  # measured preservation, where a person labelled the sets' edits
        labelled = [name for name in names[1:] if any(perturbed.preservation(run, name) for run in runs)]
        out.append(TexTable("Perturbed benchmarks: accuracy (%) and measured meaning preservation per set",
                            ["Model", *(f"{name}: {part}" for name in labelled
                                        for part in ("accuracy", "same meaning"))],
                            [[model_name(run), *(cell for name in labelled
                                                 for cell in (perturbed.accuracy(run, name),
                                                              perturbed.preservation(run, name).removeprefix(
                                                                  "same meaning ")))]
                             for run in runs],
                            notes=["Same meaning: of the set's edits a person labelled, those judged to keep the "
                                   "meaning, k/n = share [Wilson 95% interval]; each edit counted once, with its "
                                   "last label.", "Accuracy: value [95% interval]."], comments=comments))
    if any(c not in ("", "0") for row in counts for c in row[2:]):
        out.append(TexTable("Perturbed benchmarks: answers without a readable label, per set (counted wrong)",
                            ["Model", Tex("$n$"), *names], counts, comments=comments))
    return out


BOARD = Board("robustness", COMMAND, "Perturbed benchmarks: lower RB-index ranks first",
              ("dataset", "sets", "label_mode", "n", "unparsed", "acc_original", "rb_index", "rb_index_preserved",
               "preservation"), (("rb_index", False),),
              rows, ("rb_index", "n"),
              tested=(("rb_index", "rb_index", "lower"), ("acc_original", "acc[original]", "higher")),
              headings={"acc_original": "original accuracy %", "rb_index": "RB-index %",
                        "rb_index_preserved": "RB-index over meaning-preserving edits %",
                        "preservation": "accuracy and same meaning (labelled edits) per set"},
              optional=frozenset({"preservation", "rb_index_preserved"}),
              tex=tex_tables, tex_hidden=frozenset({"unparsed", "label_mode", "preservation"}))
