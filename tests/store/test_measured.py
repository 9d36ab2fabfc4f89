"""A re-run that computes nothing keeps what the computing invocation measured (peak memory, torch threads), so the
files of a finished run are not rewritten for them; any other difference is written with the new measurements."""

from __future__ import annotations

from robusteval.store.measured import keep_measurements, without_measurements

OLD = {"acc": 0.5, "peak_memory": {"rss_bytes": 1}, "environment": {"python": "3.11", "torch_threads": {"count": 2}}}


def test_only_measurements_differ_keeps_the_stored_ones() -> None:
    new = {"acc": 0.5, "peak_memory": {"rss_bytes": 9}, "environment": {"python": "3.11", "torch_threads": {"count": 1}}}
    assert keep_measurements(OLD, new) == OLD


def test_a_result_that_differs_takes_the_new_measurements() -> None:
    new = {"acc": 0.6, "peak_memory": {"rss_bytes": 9}, "environment": {"python": "3.11", "torch_threads": {"count": 1}}}
    assert keep_measurements(OLD, new) == new
    changed_environment = {**new, "acc": 0.5, "environment": {"python": "3.12", "torch_threads": {"count": 1}}}
    assert keep_measurements(OLD, changed_environment) == changed_environment


def test_nothing_stored_yet_or_not_a_mapping() -> None:
    assert keep_measurements(None, OLD) == OLD
    assert keep_measurements([1], [2]) == [2]
    assert without_measurements(OLD) == {"acc": 0.5, "environment": {"python": "3.11"}}
