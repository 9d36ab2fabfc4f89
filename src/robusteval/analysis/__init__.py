"""Measurements of texts that need a model (as opposed to the pure functions of :mod:`robusteval.metrics`):
``drift`` (how far perturbed texts move from their originals, by edits and by sentence embedding).

Light to import: models load on first use.
"""
