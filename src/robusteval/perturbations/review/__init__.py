"""Reviewing perturbed edits by hand: sample edits (:mod:`.sampling`) of a ``perturb`` file or an RB-index run
(:mod:`.items`), label them in a self-contained page (:mod:`.page`), read the labels back and measure how
often a method keeps the meaning (:mod:`.labels`)."""

from robusteval.perturbations.review.items import ReviewItem, edit_key, items_from_records, load_items
from robusteval.perturbations.review.labels import (
    LABELS,
    Label,
    LabelStore,
    preservation,
    preservation_lines,
    read_export,
)
from robusteval.perturbations.review.page import char_diff, render_page, write_page
from robusteval.perturbations.review.sampling import Sample, sample_items

__all__ = ["LABELS", "Label", "LabelStore", "ReviewItem", "Sample", "char_diff", "edit_key", "items_from_records",
           "load_items", "preservation", "preservation_lines", "read_export", "render_page", "sample_items",
           "write_page"]
