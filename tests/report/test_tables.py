"""Terminal tables: a rate with its interval, and what a run left out, why, under its table."""

from __future__ import annotations

import io

from robusteval.metrics.wordimportance import ORIGINAL_WRONG, attack_summary
from robusteval.report.model import Num
from robusteval.report.tables import format_num, format_rate, print_exclusions


def test_a_rate_prints_with_its_interval() -> None:
    assert format_rate(0.0, (0.0, 0.7934506856)) == "0.000 [0.000, 0.793]"
    assert format_rate(None, (0.0, 1.0)) == "-" and format_rate(0.5, None) == "0.500"
    assert format_num(Num(0.125, n=40, ci=(0.041, 0.29), percent=True)) == "12.5 [4.1, 29.0]"


def test_what_was_left_out_prints_under_the_table() -> None:
    out = io.StringIO()
    print_exclusions({"skip_reasons": {"no answer in the clean completion": 4, "clean answer wrong": 1},
                      "exclusions": {"clean_cot_wrong": 2}}, file=out)
    assert out.getvalue().splitlines() == [
        "not attacked: 5 (no answer in the clean completion 4, clean answer wrong 1)",
        "left out of the rates: 2 (clean reasoning already judged wrong 2)"]
    out = io.StringIO()
    print_exclusions({"skip_reasons": {}, "exclusions": {"clean_cot_wrong": 0}}, file=out)
    assert out.getvalue() == ""


def test_word_importance_counts_its_skipped_examples_by_reason() -> None:
    attacked = {"status": "failed", "n_words": 4, "per_rate": {"0.1": {"success": False, "queries": 3,
                                                                       "perturbed_words": 0}}}
    skipped = {"status": "skipped", "skip_reason": ORIGINAL_WRONG, "n_words": 0, "per_rate": {}}
    older = {"status": "skipped", "n_words": 0, "per_rate": {}}  # a record written before reasons were kept
    summary = attack_summary([attacked, skipped, older], [0.1])
    assert summary["skip_reasons"] == {ORIGINAL_WRONG: 2} and summary["n_skipped"] == 2
    assert summary["exclusions"] == {}
