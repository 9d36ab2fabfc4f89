"""Result tables printed to the terminal."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from robusteval.metrics.formatting import format_rate
from robusteval.metrics.matcha import EXCLUSION_DEFINITIONS
from robusteval.metrics.matcha_summary import FLAG, counting, flag_texts, is_over_attacked, unjudged_text
from robusteval.metrics.robustness import excluded_lines, index_note
from robusteval.report.model import Num

stdout = Console()
if not stdout.is_terminal:
    stdout.width = 160  # piped or logged output: don't fold the table into 80 columns


def format_num(num: Num, *, unit: bool = False) -> str:
    """A report number as ``12.5 [4.1, 29.0]`` (percent numbers x100; ``unit``: ``12.5 % [4.1, 29.0]``), then
    ``⚑`` when it is flagged (:attr:`Num.flags`: the surface prints the flags' text beside it)."""
    marker = f" {FLAG}" if num.flags else ""
    if num.percent:
        return format_rate(num.value, num.ci, scale=100.0, digits=num.digits, unit=" %" if unit else "") + marker
    return format_rate(num.value, num.ci, digits=num.digits) + marker


def print_exclusions(summary: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """What a run left out and why, under its table: ``not attacked: 4 (no answer in the clean completion 4)``
    from the summary's ``skip_reasons``, and its ``exclusions``: for a MATCHA summary whose rates are over every
    attacked example, what the secondary views leave out (each in the headline as a category of its own); for
    others, what is outside a rate's denominator."""
    out = file or sys.stdout
    reasons = summary.get("skip_reasons") or {}
    if reasons:
        detail = ", ".join(f"{reason} {count}" for reason, count in reasons.items())
        print(f"not attacked: {sum(reasons.values())} ({detail})", file=out)
    excluded = {name: count for name, count in (summary.get("exclusions") or {}).items() if count}
    unjudged = unjudged_text(summary)
    if is_over_attacked(summary):
        others = {name: count for name, count in excluded.items() if name not in EXCLUSION_DEFINITIONS}
        if others:
            detail = ", ".join(f"{EXCLUSIONS.get(name, name)} {count}" for name, count in others.items())
            print(f"left out of the rates: {sum(others.values())} ({detail})", file=out)
        if unjudged and summary.get("n_unjudged"):
            print(f"unjudged, answer kept but the reasoning judge abstained (a category of its own, in no verdict):"
                  f" {unjudged}", file=out)
        cot_wrong = excluded.get("clean_cot_wrong")
        if cot_wrong and counting(summary) != "authors":
            print(f"clean reasoning already judged wrong, answer kept (a category of its own): {cot_wrong}", file=out)
        elif cot_wrong:
            print(f"clean reasoning already judged wrong, answer kept: {cot_wrong} (in the authors' headline by "
                  "their verdict; in our denominator a category of its own)", file=out)
        if excluded.get("no_cot"):
            print(f"outside our denominator, in the authors': {excluded['no_cot']} (no reasoning after the clean "
                  "answer: our counting does not attack such an answer)", file=out)
        return
    if excluded:
        detail = ", ".join(f"{EXCLUSIONS.get(name, name)} {count}" for name, count in excluded.items())
        print(f"left out of the rates: {sum(excluded.values())} ({detail})", file=out)
    if unjudged and summary.get("n_unjudged"):
        print(f"left out of every rate, answer kept but the reasoning judge abstained: {unjudged}", file=out)


def print_flags(summary: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """Under a run's table, each of its flags on a line: ``⚑ semantic gate: none (edits unchecked)`` (the
    table marks the flagged rates ⚑)."""
    for text in flag_texts(summary):
        print(f"{FLAG} {text}", file=file or sys.stdout)


#: How the summaries' exclusions read in a sentence.
EXCLUSIONS = {"clean_cot_wrong": "clean reasoning already judged wrong",
              "original_wrong": "original question answered wrongly"}


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if value is None:
        return "-"
    return str(value)


#: Columns that hold a name: left-aligned, and a long name folds onto another line instead of being cut to "…".
NAME_COLUMNS = ("model", "dataset", "set", "method")


def readable_names(names: Sequence[str]) -> dict[str, str]:
    """Each model spec as a table shows it: its short name (``hf:/home/u/.cache/x/llama-3-8b`` -> ``llama-3-8b``,
    :func:`~robusteval.report.collect.short_model`), with more of its path where two different specs would read
    the same (``a/model``, ``b/model``), and the whole spec where even that does not tell them apart."""
    from robusteval.report.collect import short_model

    distinct = list(dict.fromkeys(names))
    shown = {name: short_model(name) for name in distinct}
    for name in distinct:
        twins = [other for other in distinct if shown[other] == shown[name]]
        if len(twins) < 2:
            continue
        for other in twins:  # the shortest tail of its path that no twin shares
            parts = other.split("@", 1)[0].rstrip("/").split("/")
            tails = ["/".join(parts[-k:]) for k in range(1, len(parts) + 1)]
            shown[other] = next((tail for tail in tails if sum(t.endswith(tail) for t in twins) == 1), other)
    return shown


def print_summary_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], *,
                        file: TextIO | None = None) -> None:
    """A rich table on stdout, or on ``file`` (plain text, 160 columns wide). A model spec in the ``model``
    column is shown by its readable name (:func:`readable_names`); no name is ever cut short."""
    table = Table()
    for column in columns:
        named = column in NAME_COLUMNS
        table.add_column(column, justify="left" if named else "right", overflow="fold" if named else "ellipsis")
    models = readable_names([str(row["model"]) for row in rows if isinstance(row.get("model"), str)])
    for row in rows:
        shown = {**row, "model": models[row["model"]]} if isinstance(row.get("model"), str) else row
        table.add_row(*(format_value(shown.get(c)) for c in columns))
    console = stdout if file is None or file is sys.stdout else Console(file=file, width=160, no_color=True)
    # The title on a line of its own: as the table's caption rich folds it to the table's width.
    console.print(title, style="bold", markup=False, highlight=False)
    console.print(table)


def print_diagnosis(diagnosis: Mapping[str, Any], *, file: TextIO | None = None) -> None:
    """A VAR-MATH diagnosis (``summary["diagnosis"]``): problems per category with Wilson intervals, the drop
    from the original problems with its paired interval, and the one-line reading."""
    out = file or sys.stdout
    categories = diagnosis.get("categories") or {}
    rows = [{"category": name, "problems": f"{share['k']}/{share['n']}",
             "share": format_rate(share["value"], share["ci95"])}
            for name, share in categories.items() if share.get("k")]
    print_summary_table("VAR-MATH diagnosis: problems per category (share [95% Wilson interval], n = problems)",
                        rows, ["category", "problems", "share"], file=file)
    drop = diagnosis.get("drop") or {}
    if drop.get("n"):
        rows = [{"score": name, "value": drop[name], "absolute drop": format_rate(
                    drop["absolute"][name]["value"], drop["absolute"][name]["ci95"]),
                 "relative drop": format_rate(drop["relative"][name]["value"], drop["relative"][name]["ci95"])}
                for name in ("loose", "strict")]
        print_summary_table(f"drop from the original problems (original {drop['original']:.3f}, n = {drop['n']} "
                            "problems; paired bootstrap 95% intervals)", rows,
                            ["score", "value", "absolute drop", "relative drop"], file=file)
    print(f"diagnosis: {diagnosis.get('line')}", file=out)


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
