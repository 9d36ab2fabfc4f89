"""MATCHA's and transfer's ``runs compare`` leaderboards: one row per run, every number the section builder's own
:class:`~robusteval.report.model.Num` (same value, n and interval as the report's tables).

MATCHA: higher UR (answer and reasoning both survive) ranks first, then lower SR; the ranking number rests on
``n_attacked``. Transfer: lower transfer rate ranks first, over the questions answered correctly originally.
"""

from __future__ import annotations

from robusteval.attacks.matcha.results import section as matcha
from robusteval.attacks.matcha.results.commands import MATCHA, TRANSFER
from robusteval.metrics import matcha_summary
from robusteval.report.collect import dataset_name, model_name
from robusteval.report.compare import Board, Row
from robusteval.report.model import Num
from robusteval.runs import Run

#: MATCHA's columns of the categories beside UR/SR/WR (their rate keys in the summary).
CATEGORY_COLUMNS = {"unjudged": "unjudged_rate", "clean_wrong": "clean_cot_wrong_rate"}
#: Their columns' headings in the page and the terminal (the CSV keeps the plain names).
HEADINGS = {"ur": "UR %", "sr": "SR %", "wr": "WR %", "ur_ours": "UR % (ours)",
            "sr_ours": "SR % (ours)", "wr_ours": "WR % (ours)", "n_attacked_ours": "n_attacked (ours)",
            "unjudged": "unjudged %", "clean_wrong": "clean wrong %", "unjudged_ours": "unjudged % (ours)",
            "clean_wrong_ours": "clean wrong % (ours)", "outcomes_ours": "outcomes (ours)",
            "n_rated": "n_rated (old: UR/SR/WR's n)", "n_judged": "n_judged (secondary)",
            "ur_judged": "UR % among judged", "sr_judged": "SR % among judged", "wr_judged": "WR % among judged",
            "transfer_rate": "transfer rate %", "n_transferred": "transferred"}
#: Columns shown only where some row fills them (runs made before issue 26 have no flags, no unjudged count and
#: one denominator).
OPTIONAL = frozenset({"flags", "n_unjudged", "n_rated", "unjudged", "clean_wrong", "outcomes", "n_attacked_ours",
                      "ur_ours", "sr_ours", "wr_ours", "unjudged_ours", "clean_wrong_ours", "outcomes_ours",
                      "n_judged", "ur_judged", "sr_judged", "wr_judged"})
#: Columns shown only where some row's number is not 0 (a category no run holds an example of: the ``outcomes``
#: column still counts it).
ZERO_HIDDEN = frozenset({"unjudged", "clean_wrong", "unjudged_ours", "clean_wrong_ours"})
#: Columns a paper's table leaves out: the counts by outcome (the rates beside them say the same).
TEX_HIDDEN = frozenset({"outcomes", "outcomes_ours"})


def _matcha_rows(run: Run) -> list[Row]:
    """A MATCHA run: its counting, the headline UR/SR/WR and the other categories (unjudged, clean reasoning
    already wrong) over every attacked example (``n_attacked``; a summary made before: ``n_rated``, shown too),
    the counts of each category summing to it (``outcomes``), under the authors' counting the same over our
    denominator (``*_ours``), the rates among the judged answers only (``*_judged``, over ``n_judged``: a
    secondary view), and the run's flags (its rates marked ⚑)."""
    summary = run.summary or {}
    ours = matcha_summary.other_denominators(summary).get("ours") or {}
    judged = matcha_summary.among_judged(summary) or {}
    old = matcha_summary.rates_over(summary) == "n_rated"
    categories = {c.key for c in matcha_summary.categories(summary)}
    return [{"model": model_name(run), "dataset": dataset_name(run), "level": matcha.run_level(run),
             "variant": matcha.run_variant(run), "counting": matcha_summary.counting(summary),
             "n": str(summary.get("n")), "n_attacked": str(summary.get("n_attacked")),
             "n_rated": str(summary.get("n_rated")) if old else "",
             "n_unjudged": str(summary.get("n_unjudged", "")),
             **{m: matcha.rate(summary, m, run) for m in matcha.METRICS},
             **{column: matcha.rate(summary, key, run) for column, key in CATEGORY_COLUMNS.items()
                if key in categories},
             "outcomes": matcha_summary.categories_text(summary) if not old else "",
             **({"n_attacked_ours": str(ours.get("n")),
                 **{f"{m}_ours": matcha.denominator_rate(summary, m, "ours", run) for m in matcha_summary.RATES},
                 **{f"{column}_ours": matcha.denominator_rate(summary, key, "ours", run)
                    for column, key in CATEGORY_COLUMNS.items() if key in ours},
                 "outcomes_ours": matcha_summary.categories_text(ours)}
                if ours else {}),
             **({"n_judged": str(judged.get("n")),
                 **{f"{m}_judged": matcha.judged_rate(summary, m, run) for m in matcha_summary.RATES}}
                if judged else {}),
             "flags": matcha_summary.flags_line(summary)}]


def _transfer_rows(run: Run) -> list[Row]:
    """A transfer run: its source, counts, the transfer rate and the other categories over the questions
    answered correctly originally."""
    summary = run.summary or {}
    over = matcha.transfer_denominator(summary)
    return [{"model": model_name(run), "source": matcha.transfer_source(run),
             "n_transferred": str(summary.get("n_transferred")),
             "n_original_correct": str(summary.get("n_original_correct")),
             "n_unjudged": str(summary.get("n_unjudged", "")),
             "transfer_rate": matcha.transfer_rate(run),
             **{column: Num(summary.get(key), n=summary.get(over), ci=(summary.get("ci95") or {}).get(key),
                            runs=(str(run.path),), percent=True)
                for column, key in (("wr", "wr"), ("unjudged", "unjudged_rate")) if key in summary},
             "outcomes": (matcha_summary.categories_text(summary) if matcha_summary.is_over_attacked(summary)
                          else "")}]


MATCHA_BOARD = Board(
    "matcha", MATCHA, "MATCHA: higher UR (answer and reasoning survive) ranks first",
    ("dataset", "level", "variant", "counting", "n", "n_attacked", "n_rated", "n_unjudged", "acc", "ur", "sr",
     "wr", "unjudged", "clean_wrong", "outcomes", "n_attacked_ours", "ur_ours", "sr_ours", "wr_ours",
     "unjudged_ours", "clean_wrong_ours", "outcomes_ours", "n_judged", "ur_judged", "sr_judged", "wr_judged",
     "flags"),
    (("ur", True), ("sr", False)), _matcha_rows, ("ur", "n_attacked"),
    tested=(("acc", "acc", "higher"), ("ur", "ur", "higher"), ("sr", "sr", "lower"), ("wr", "wr", "lower")),
    headings=HEADINGS, optional=OPTIONAL, zero_hidden=ZERO_HIDDEN, tex_hidden=TEX_HIDDEN, own_tables=(
        ("every attacked example by outcome (UR, SR, WR above and these sum to 100 %; the counts to n_attacked): "
         "% [95% interval]", ("unjudged", "clean_wrong", "outcomes")),
        ("the same runs over our denominator (counting: authors; the rates above are over the authors' "
         "n_attacked): % [95% interval], n = n_attacked (ours)",
         ("n_attacked_ours", "ur_ours", "sr_ours", "wr_ours", "unjudged_ours", "clean_wrong_ours", "outcomes_ours")),
        ("secondary view, not the headline: UR, SR, WR among the judged answers only (abstentions and clean "
         "reasonings judged wrong left out): % [95% interval], n = n_judged",
         ("n_judged", "ur_judged", "sr_judged", "wr_judged"))))
TRANSFER_BOARD = Board(
    "transfer", TRANSFER, "Transfer: lower transfer rate ranks first",
    ("source", "n_transferred", "n_original_correct", "n_unjudged", "transfer_rate", "wr", "unjudged",
     "outcomes"), (("transfer_rate", False),),
    _transfer_rows, ("transfer_rate", "n_original_correct"),
    tested=(("transfer_rate", "transfer_rate", "lower"),), headings=HEADINGS, optional=OPTIONAL,
    zero_hidden=ZERO_HIDDEN, tex_hidden=TEX_HIDDEN)
