"""MATCHA's and transfer's numbers with their denominators and intervals (``runs show``'s rates,
``results_frame``): the section builder's own :class:`~robusteval.report.model.Num` of each.

MATCHA's UR/SR/WR (and its other categories, ``unjudged_rate``...) rest on ``n_attacked`` (every attacked example;
a summary made before: ``n_rated``), not on ``n``; their rates among the judged answers only are ``ur[judged]``...
over ``n_judged`` (a secondary view).
"""

from __future__ import annotations

from robusteval.attacks.matcha.results import section as matcha
from robusteval.metrics import matcha_summary
from robusteval.report.model import Num, Rate
from robusteval.runs import Run


def matcha_rates(run: Run) -> list[Rate]:
    """ACC over n; UR/SR/WR and the other categories over the headline denominator (``n_attacked``; summaries
    made before: ``n_rated``) and, under the authors' counting, over the other denominator too (``ur[ours]``...);
    the rates among the judged answers (``ur[judged]``..., over ``n_judged``, a secondary view); every
    category carries the run's flags (marked ⚑, their text as its note) and, in ``results_frame``, the run's
    counting, flags and unjudged examples."""
    summary = run.summary or {}
    flags = "; ".join(matcha_summary.flag_texts(summary))
    extra = {"counting": matcha_summary.counting(summary), "flags": flags or None,
             "n_unjudged": summary.get("n_unjudged")}
    over = matcha_summary.rates_over(summary)
    rated = over
    if matcha_summary.denominators(summary):
        rated = f"{over} ({matcha_summary.denominator_name(matcha_summary.headline_denominator(summary))})"
    shown = [c.key for c in matcha_summary.categories(summary)]
    rates = [Rate("acc", matcha.rate(dict(summary), "acc", run), "n", extra=extra)]
    rates += [Rate(m, matcha.rate(dict(summary), m, run), rated, note=flags, extra=extra) for m in shown]
    rates += [Rate(f"{c.key}[{name}]", matcha.denominator_rate(dict(summary), c.key, name, run),
                   f"{over} ({matcha_summary.denominator_name(name)})", note=flags, extra=extra)
              for name, block in matcha_summary.other_denominators(summary).items()
              for c in matcha_summary.categories(block)]
    if matcha_summary.among_judged(summary):
        rates += [Rate(f"{m}[judged]", matcha.judged_rate(summary, m, run), "n_judged (secondary view)", extra=extra)
                  for m in matcha_summary.RATES]
    return rates


def transfer_rates(run: Run) -> list[Rate]:
    """The transfer rate, then UR/SR/WR and the other categories, over the questions answered correctly
    originally (``n_original_correct``; runs made before: ``n_rated``)."""
    summary = run.summary or {}
    over = matcha.transfer_denominator(summary)
    rates = [Rate("transfer_rate", matcha.transfer_rate(run), over)]
    return rates + [Rate(m, Num(summary.get(m), n=summary.get(over),
                                ci=(summary.get("ci95") or {}).get(m), runs=(str(run.path),), percent=True),
                         over) for m in ("ur", "sr", "wr", *matcha.OTHER_CATEGORIES) if m in summary]
