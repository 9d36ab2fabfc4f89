"""MATCHA as a study method (the runner its registration names): the registered attack's config, data, identity
and pipeline, as ``robusteval attack matcha`` runs them. A method's ``study_method`` module is in the studies layer
(``tests/test_import_layers.py``): it builds the study's :class:`~robusteval.studies.methods.Method`."""

from __future__ import annotations

from robusteval.studies.methods import Method, attack_method


def study_method() -> Method:
    """The study's ``matcha`` method; its headlines are the registration's (``robusteval.methods``)."""
    return attack_method("matcha")
