"""A perturbed-benchmark run's tables in the terminal (``robusteval robustness``, the quick-start): accuracy, drop
and texts changed per set with n and intervals, the changed-only and preserved-only views, the RB-index."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

from robusteval.metrics.formatting import format_rate
from robusteval.metrics.robustness import excluded_lines, index_note
from robusteval.report.tables import print_summary_table


def print_robustness_tables(summary: Mapping[str, Any], *, label_mode: str, title: str = "accuracy under perturbation",
                            file: TextIO | None = None) -> None:
    """A robustness run's table (accuracy, drop and texts changed per set, each rate with n and interval), the
    accuracies on changed texts only when the run has them, each set left out of the RB-index on a line naming it,
    and the RB-index with the number of sets it averages."""
    out = file or sys.stdout
    n = summary["n"]
    unparsed = summary.get("n_unparsed") or {}
    sets = summary["sets"]
    rows = [{"set": "original", "acc": format_rate(summary["acc_original"], summary["acc_original_ci95"], n=n),
             "unparsed": unparsed.get("original")}] + [
        {"set": name, "acc": format_rate(entry["acc"], entry["acc_ci95"], n=n),
         "drop": format_rate(entry["drop"], entry["drop_ci95"], n=n),
         "changed": _changed_cell(entry, n), "in index": "yes" if entry.get("in_index", True) else "no",
         "unparsed": unparsed.get(name)}
        for name, entry in sets.items()
    ]
    from robusteval.evals.robustness.preservation import preservation_text

    labelled = [name for name, entry in sets.items() if entry.get("preservation")]
    for row in rows[1:]:  # measured preservation beside the accuracy, where a person labelled the set's edits
        row["same meaning (labelled edits)"] = preservation_text(sets[row["set"]].get("preservation") or {})
    extra = ["same meaning (labelled edits)"] if labelled else []
    if label_mode == "soft":  # argmax of scored labels: nothing is parsed, nothing can be unread
        print_summary_table(f"{title} (soft labels, n={n})", rows,
                            ["set", "acc", *extra, "drop", "changed", "in index"], file=out)
    else:
        print_summary_table(f"{title} ({label_mode} labels, n={n}; unparsed: labels that could not be read, counted "
                            "wrong)", rows, ["set", "acc", *extra, "drop", "changed", "in index", "unparsed"],
                            file=out)
    changed_rows = [{"set": name, "n changed": block["n"],
                     "acc original (changed only)": format_rate(block["acc_original"], block["acc_original_ci95"],
                                                                n=block["n"]),
                     "acc perturbed (changed only)": format_rate(block["acc"], block["acc_ci95"], n=block["n"]),
                     "drop (changed only)": format_rate(block["drop"], block["drop_ci95"], n=block["n"])}
                    for name, entry in sets.items() if (block := entry.get("changed_only")) is not None]
    if changed_rows:
        print_summary_table("changed texts only (--changed-only): each set's accuracy on the examples it changed "
                            "and the original accuracy on the same examples", changed_rows, list(changed_rows[0]),
                            file=out)
    for line in excluded_lines(summary):
        print(line, file=out)
    rb = summary["rb_index"]
    if rb is None:
        why = ("no set changed enough texts to count" if not summary.get("T") and sets
               else "original accuracy is 0")
        print(f"RB-index: undefined ({why})", file=out)
    else:
        print(f"RB-index {index_note(summary)}: {format_rate(rb, summary.get('rb_index_ci95'), digits=4, n=n)}"
              f"  (lower is more robust)", file=out)
    if summary.get("preserved_only"):
        print_preserved_only(summary["preserved_only"], file=out)


def print_preserved_only(block: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """The accuracies and RB-index over the edits labelled same meaning (``--preserved-only``): a table of its
    own, under the headline, never in its place."""
    from robusteval.metrics.robustness import preserved_line

    out = file or sys.stdout
    rows = [{"set": name, "n kept": entry["n"],
             "acc original (kept)": format_rate(entry["acc_original"], entry["acc_original_ci95"], n=entry["n"]),
             "acc perturbed (kept)": format_rate(entry["acc"], entry["acc_ci95"], n=entry["n"]),
             "in index": "yes" if entry.get("in_index") else f"no ({entry.get('excluded_reason')})"}
            for name, entry in (block.get("sets") or {}).items()]
    if rows:
        print_summary_table("over meaning-preserving edits only (--preserved-only): the examples whose every edit "
                            "a person labelled same meaning, paired with their originals", rows, list(rows[0]),
                            file=out)
    print(preserved_line(block), file=out)


def _changed_cell(entry: Mapping[str, Any], n: int) -> str:
    """``3/8 (37.5%)``: texts the set changed, of n."""
    changed = entry.get("n_changed")
    if changed is None:
        return "-"
    return f"{changed}/{n} ({100 * changed / n:.1f}%)" if n else f"{changed}/{n}"
