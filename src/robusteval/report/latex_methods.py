"""Each method's paper tables for ``runs compare --format latex`` (as :class:`~robusteval.report.latex_tex.TexTable`).

* MATCHA: Table 1/2 (per attack level and group of comparable runs): ACC over all questions, UR, SR, WR and the
  other categories (where some run has one) over every attacked question, a dataset per column group. Under the
  authors' counting each run has two rows, one per denominator (the authors' n and ours), each with its rates;
  the caption says what each n counts. Table 3: the baselines.
* Every other method: its leaderboards, rows best first. What every row shares (the dataset, the sets, the label
  mode, β) is said in the caption, not repeated in a column; the rank order and why a row is not ranked too. A
  leaderboard kind may add notes and tables of its own (``Board.tex``: one column per set or category).
* The pairwise tests of every leaderboard: the difference with its interval, n, the test, p and Holm's p (bold
  where the pair differs).
"""

from __future__ import annotations

from collections.abc import Sequence

from robusteval.metrics.formatting import NO_INTERVAL
from robusteval.metrics.matcha_summary import counting, denominator_name, denominators, rates_over
from robusteval.report import matcha
from robusteval.report.collect import MATCHA, Inputs, dataset_name, model_name
from robusteval.report.comparability import comparability_key, key_hash
from robusteval.report.compare import HEADINGS, UNRANKED, Leaderboard, all_boards
from robusteval.report.latex_tex import Heading, Tex, TexTable, escape
from robusteval.report.model import Cell, Num, Table
from robusteval.report.pairing import Comparison, p_text
from robusteval.runs import Run

#: Leaderboard columns a paper's table never shows: the rank (rows are in rank order; the caption says so), why a
#: row is not ranked (the caption), the run's directory, and what other tables or the caption hold.
HIDDEN = frozenset({"rank", UNRANKED, "run", "flags", "outcomes", "outcomes_ours"})
#: Headings in LaTeX where the terminal's would read badly.
TEX_HEADINGS: dict[str, Heading] = {
    "n": Tex("$n$"), "n_attacked": Tex(r"$n_{\mathrm{att}}$"), "n_original_correct": "originally correct",
    "n_unjudged": "unjudged", "n_problems": "problems", "n_transferred": "transferred", "rate": Tex(r"$\alpha$"),
    "beta": Tex(r"$\beta$"), "model": "Model", "dataset": "Dataset", "method": "Method", "sets": "Sets",
    "instances": "Instances", "diagnosis": "Diagnosis", "source": "Source", "level": "Level",
}


def heading(column: str) -> Heading:
    if column in TEX_HEADINGS:
        return TEX_HEADINGS[column]
    return HEADINGS.get(column, column).replace(" %", " (%)")


# ------------------------------------------------------------------------------------------------------ MATCHA

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


# ----------------------------------------------------------------------------------------------- leaderboards

def board_tables(board: Leaderboard, inputs: Inputs) -> list[TexTable]:
    """``board`` as a paper's table (rows best first), with its per-set or per-category table where it has one
    (its kind's ``tex``)."""
    kind = next((b for b in all_boards() if b.method == board.method), None)
    hidden = HIDDEN | (kind.tex_hidden if kind is not None else frozenset())
    columns = [c for c in board.shown if c not in hidden and not c.startswith("share_")]
    rows = list(board.rows)
    notes: list[str] = []
    for column in [c for c in columns if c != "model"]:
        values = {str(row.get(column, "")) for row in rows}
        if not any(isinstance(row.get(column), Num) for row in rows) and len(values) == 1 and not _count(column):
            name = {"rate": "α", "beta": "β"}.get(column, HEADINGS.get(column, column))
            notes.append(f"{name}: {next(iter(values))}.")
            columns.remove(column)
    title, _, order = board.title.partition(": ")
    unranked = [f"{row['model']} ({row[UNRANKED]})" for row in rows if row.get(UNRANKED)]
    notes.insert(0, f"Rows ranked: {order.split(' (comparable group')[0]}."
                 + (f" Not ranked: {'; '.join(unranked)}." if unranked else ""))
    notes.append("Each number: value [95% interval].")
    group = board.title[len(title):].partition(" (comparable group")[2]
    caption = title + (f" (comparable group{group}" if group else "")
    comments = [f"comparability key {board.group}", *([board.apart] if board.apart else [])]
    main = TexTable(caption, [heading(c) for c in columns], [[row.get(c, "") for c in columns] for row in rows],
                    notes=notes, comments=comments)
    return kind.tex(board, inputs, main) if kind is not None and kind.tex is not None else [main]


def _count(column: str) -> bool:
    return column == "n" or column.startswith("n_")


# ---------------------------------------------------------------------------------------------- pairwise tests

_TESTS = {"McNemar exact": "McNemar (exact)", "McNemar chi-square": r"McNemar ($\chi^2$)",
          "paired bootstrap": "paired bootstrap"}


def pairwise_table(comparisons: Sequence[Comparison], caption: str, names: dict[str, str] | None = None
                   ) -> TexTable:
    """The pairwise tests as a paper's table: the number, the pair, A - B with its interval (points for
    percentages), the shared examples n, the test, p and Holm's p (bold where the pair differs)."""
    names = names or {}
    rows: list[list[Cell]] = []
    untested: dict[str, list[str]] = {}  # why -> the numbers and pairs
    for c in comparisons:
        test = c.test
        difference: Cell = "--"
        if test.difference is not None:
            scale = 100.0 if c.percent else 1.0
            shown = _signed(f"{test.difference * scale:+.1f}")
            if test.ci95 is not None:
                low, high = (_signed(f"{v * scale:.1f}") for v in test.ci95)
                shown += f" {{\\scriptsize[{low}, {high}]}}"
            else:  # a difference with no interval (the paired bootstrap never varied) is never shown bare
                shown += f" {{\\scriptsize{NO_INTERVAL}}}"
            difference = Tex(shown)
        if test.status != "tested" and test.note:
            who = f"{names.get(c.model_a, c.model_a)} vs {names.get(c.model_b, c.model_b)}"
            untested.setdefault(f"{test.status}: {test.note}", []).append(f"{c.label or c.column} ({who})")
        holm = _p(test.p_holm)
        rows.append([c.label or c.column, names.get(c.model_a, c.model_a), names.get(c.model_b, c.model_b),
                     difference, str(test.n) if test.n else "",
                     Tex(_TESTS.get(test.test, test.test)) if test.status == "tested" else test.status,
                     _p(test.p), Tex(f"\\textbf{{{holm}}}") if test.significant else holm])
    columns: list[Heading] = ["Number", "A", "B", Tex("A $-$ B"), Tex("$n$"), "Test", Tex("$p$"),
                              Tex(r"$p_{\mathrm{Holm}}$")]
    pair = {(str(row[1]), str(row[2])) for row in rows}
    lead: list[str] = []
    if len(pair) == 1 and rows:  # one pair of models throughout (a 2-model study): named once, in the caption
        (a, b), = pair
        lead.append(f"A: {a}; B: {b}.")
        columns, rows = [columns[0], *columns[3:]], [[row[0], *row[3:]] for row in rows]
    notes = [*lead, "Paired on the examples both runs hold (n); A - B in points for percentages, with its 95% interval; "
             "p two-sided; Holm's p adjusted over every test of this export; bold: the pair differs (Holm's p "
             "below 0.05)."]
    if untested:
        notes += [f"{', '.join(numbers)}: {why}." for why, numbers in untested.items()]
    return TexTable(caption, columns, rows, keys=1 if lead else 3, notes=notes)


def _p(p: float | None) -> Tex:
    text = p_text(p)
    return Tex("--" if text == "-" else text.replace("<", "$<$"))


def _signed(text: str) -> str:
    """A signed number with a real minus sign."""
    return text.replace("-", "$-$")
