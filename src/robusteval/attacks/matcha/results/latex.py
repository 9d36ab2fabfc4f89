"""MATCHA's paper tables for ``runs compare --format latex`` (its results' ``latex`` hook, shown instead of its
leaderboard's generic table).

* Table 1/2 (per attack level and group of comparable runs): ACC over all questions, UR, SR, WR and the other
  categories (where some run has one) over every attacked question, a dataset per column group. Under the
  authors' counting each run has two rows, one per denominator (the authors' n and ours), each with its rates;
  the caption says what each n counts.
* Table 3: the baselines (``--variant``) beside MATCHA, where they ran.
"""

from __future__ import annotations

from collections.abc import Sequence

from robusteval.attacks.matcha.results import section as matcha
from robusteval.attacks.matcha.results.commands import MATCHA
from robusteval.metrics.matcha_summary import counting, denominator_name, denominators, rates_over
from robusteval.report.collect import Inputs, dataset_name, model_name
from robusteval.report.comparability import comparability_key, key_hash
from robusteval.report.latex_tex import Heading, Tex, TexTable, escape
from robusteval.report.model import Cell, Table
from robusteval.runs import Run


def matcha_tables(inputs: Inputs) -> list[TexTable]:
    """Table 1/2 per level and group of comparable MATCHA runs (full attack), then Table 3 when baselines ran."""
    direct = [run for run in inputs.of(MATCHA) if run.summary and matcha.run_variant(run) == "full"]
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in direct:
        groups.setdefault((matcha.run_level(run), key_hash(comparability_key(run))), []).append(run)
    out = [_matcha_table(level, group, runs) for (level, group), runs in groups.items()]
    baselines = matcha.baselines_table(inputs.all_runs(MATCHA))
    if isinstance(baselines, Table):
        out.append(_from_report(baselines))
    return out


def _matcha_table(level: str, group: str, runs: Sequence[Run]) -> TexTable:
    summaries = [run.summary or {} for run in runs]
    datasets = list(dict.fromkeys(dataset_name(run) for run in runs))
    authors = any(counting(s) == "authors" for s in summaries)
    rules = list(dict.fromkeys(matcha.success_rule(run) for run in runs))
    # The categories beside UR/SR/WR that some run holds an example of (they sum to n_attacked with them).
    extra = [m for m in matcha.OTHER_CATEGORIES if any((s.get(m) or 0) > 0 for s in summaries)
             or any((d.get(m) or 0) > 0 for s in summaries for d in denominators(s).values())]
    metrics = ("ur", "sr", "wr", *extra)
    keys: list[Heading] = ["Model", *(["Success check"] if len(rules) > 1 else []),
                           *(["Denominator"] if authors else [])]
    block: list[Heading] = [Tex("$n$"), "ACC", Tex(r"$n_{\mathrm{att}}$"), *(matcha.LABELS[m] for m in metrics)]
    rows: dict[tuple[str, ...], dict[str, list[Cell]]] = {}
    for run in runs:
        summary = run.summary or {}
        key = [model_name(run), *([matcha.success_rule(run)] if len(rules) > 1 else [])]
        views = list(denominators(summary)) if counting(summary) == "authors" else [""]
        for view in views:
            head = (*key, *([denominator_name(view) if view else "ours"] if authors else []))
            rates = [matcha.denominator_rate(summary, m, view, run) if view else matcha.rate(summary, m, run)
                     for m in metrics]
            over = rates[0].n
            rows.setdefault(head, {})[dataset_name(run)] = [str(summary.get("n")), matcha.rate(summary, "acc", run),
                                                            "" if over is None else str(over), *rates]
    body = [[*head, *(cell for d in datasets for cell in by.get(d, [""] * len(block)))] for head, by in rows.items()]
    number = "1" if level == "token" else "2"
    caption = Tex(escape(f"MATCHA {level}-level attack" + (f" on {datasets[0]}" if len(datasets) == 1 else "")
                         + ": ACC (%) over all ") + "$n$ questions; "
                  + escape(", ".join(matcha.LABELS[m] for m in metrics) + " (%) over the ")
                  + r"$n_{\mathrm{att}}$ attacked questions, summing to 100")
    notes = ["Each number: value [95% interval]."]
    if len(rules) == 1:
        notes.append(f"Success check: {rules[0]} ({matcha.SUCCESS_RULES.get(rules[0], rules[0])}).")
    if authors:
        definitions = {denominator_name(name): str(view.get("definition") or "?") for s in summaries
                       for name, view in denominators(s).items()}
        notes.append("Counting: the authors' rules; each run has a row per denominator, each with its own n and "
                     "rates: " + "; ".join(f"{name}: {what}" for name, what in definitions.items()) + ".")
    else:
        notes.append("Counting: ours (every attacked question).")
    if any(rates_over(s) == "n_rated" for s in summaries):
        notes.append("Runs made before every attacked question was the denominator: UR, SR and WR over the judged "
                     "ones only (n_rated).")
    return TexTable(caption, [*keys, *(block * len(datasets))], body, keys=len(keys),
                    groups=[(d, len(block)) for d in datasets] if len(datasets) > 1 else [],
                    notes=notes, comments=[f"comparability key {group}", f"paper Table {number} layout"])


def _from_report(block: Table) -> TexTable:
    """A report table (MATCHA's Table 3) as a TexTable: its first column the key, its groups over the others."""
    caption = block.caption.replace(" (paper Table 3 layout)", "")
    groups = [(label, width) for label, width in block.groups][1:] if block.groups else []
    return TexTable(caption, list(block.columns), [list(row) for row in block.rows], keys=1, groups=groups,
                    notes=[block.note] if block.note else [], comments=["paper Table 3 layout"])
