"""Metrics and their confidence intervals.

The names below are imported on first use (:func:`robusteval.lazy.lazy_exports`): :mod:`.stats` needs numpy, and a
light module of this package (:mod:`.ors_constants`, read by a command's ``--help``) must not load it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from robusteval.lazy import lazy_exports

if TYPE_CHECKING:
    from robusteval.metrics.stats import bootstrap_ci, proportion, wilson_interval

__all__ = ["bootstrap_ci", "proportion", "wilson_interval"]

__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, "robusteval.metrics.stats"))
