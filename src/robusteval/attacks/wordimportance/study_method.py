"""What ``robusteval study`` runs in a word-importance cell: the registered attack's config, identity and pipeline
(the same its ``attack wordimportance`` command uses). In the studies layer (``SUBLAYERS`` of
``tests/test_import_layers.py``): it builds a :class:`~robusteval.studies.methods.Method`."""

from __future__ import annotations

from robusteval.attacks.base import get_attack
from robusteval.studies.methods import Method


def method() -> Method:
    """The study method of the word-importance attack (its headlines come from its registration)."""
    attack = get_attack("wordimportance")
    return Method("wordimportance", attack.config_type, attack.data_kind, attack.identity,
                  lambda c, b, s, load, bs: attack.run(c, b, s, load_model=load, batch_size=bs), ())
