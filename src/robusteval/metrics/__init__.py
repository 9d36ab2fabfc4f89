"""Metrics and their confidence intervals."""

from robusteval.metrics.stats import bootstrap_ci, proportion, wilson_interval

__all__ = ["bootstrap_ci", "proportion", "wilson_interval"]
