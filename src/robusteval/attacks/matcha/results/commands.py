"""What MATCHA's and transfer's runs record as their command, and the stage of MATCHA's per-example outcomes.

Spelled here, not imported: the pipelines that write them import torch (``tests/report/test_report_constants.py``
pins the two together), and the registration spells them too (it imports nothing but the method registry).
"""

from __future__ import annotations

#: ``attacks.matcha.pipeline.COMMAND``.
MATCHA = "attack matcha"
#: The command a transfer run records (``attacks.matcha.transfer``).
TRANSFER = "transfer"
#: ``attacks.matcha.pipeline.OUTCOME_STAGE``: one row per example of a MATCHA run.
OUTCOME_STAGE = "matcha_outcome"
#: One row per transferred example of a transfer run.
TRANSFER_STAGE = "transfer_outcome"
