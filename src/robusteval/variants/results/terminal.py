"""A VAR-MATH run's diagnosis in the terminal (``robusteval variants eval``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

from robusteval.metrics.formatting import format_rate
from robusteval.report.tables import print_summary_table


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


