"""Every number the paired tests read per example is reproduced exactly by the run's stored outcomes, on real
runs of every method (``helpers.reportruns``): eval-free methods here, eval in the study and compare tests."""

from __future__ import annotations

from pathlib import Path

from robusteval.metrics.significance import paired_test
from robusteval.report.pairing import run_outcomes
from robusteval.report.rates import run_rates
from robusteval.runs import load_run

#: The numbers each method's runs are tested on (``report.compare.BOARDS``' ``tested``, the study's headlines).
TESTED = {
    "attack matcha": ("acc", "ur", "sr", "wr"),
    "transfer": ("transfer_rate",),
    "variants eval": ("strict", "loose"),
    "robustness": ("acc[original]", "acc[C-homophone]", "rb_index"),
    "attack wordimportance": ("asr[0.1]", "asr[0.2]", "asr[0.3]"),
}


def test_stored_outcomes_reproduce_every_tested_number(all_runs: dict[str, Path]) -> None:
    seen = set()
    for name, path in all_runs.items():
        if not (path / "results.sqlite").is_file():
            continue  # a sweep or ORS directory
        run = load_run(path)
        if run.command not in TESTED or not run.summary:
            continue
        rates = {rate.metric: rate.num.value for rate in run_rates(run)}
        for metric in TESTED[str(run.command)]:
            if metric not in rates:
                continue
            outcomes = run_outcomes(run, metric, rates[metric])
            # An undefined number (nothing in its denominator) is undefined from the rows too.
            assert outcomes is not None and outcomes.reproduces(), (name, metric)
            if rates[metric] is not None:  # a run against itself: alike on every example, never "different"
                assert paired_test(outcomes, outcomes).p == 1.0, (name, metric)
            seen.add((str(run.command), metric.split("[")[0]))
    assert {
        ("attack matcha", "ur"),
        ("attack matcha", "acc"),
        ("robustness", "rb_index"),
        ("robustness", "acc"),
        ("attack wordimportance", "asr"),
        ("variants eval", "strict"),
        ("transfer", "transfer_rate"),
    } <= seen


def test_a_number_the_store_does_not_hold_is_not_read(all_runs: dict[str, Path]) -> None:
    run = load_run(all_runs["robustness"])
    assert run_outcomes(run, "acc[no-such-set]", 0.5) is None
    shown = next(rate.num.value for rate in run_rates(run) if rate.metric == "rb_index")
    assert shown is not None and run_outcomes(run, "rb_index", shown) is not None
    assert run_outcomes(run, "rb_index", shown + 0.25) is None  # no choice of sets gives another index
    outcomes = run_outcomes(run, "acc[original]", 0.999)
    assert outcomes is not None and not outcomes.reproduces()  # what paired_test then refuses to test
