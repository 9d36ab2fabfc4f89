"""The report reads runs by the names their pipelines write. Where the pipeline's module is light it imports
the name; where that module imports torch (which ``robusteval report`` must not), it keeps a copy, pinned
here."""

from __future__ import annotations

import subprocess
import sys


def test_local_copies_equal_their_sources() -> None:
    from robusteval.attacks.matcha import pipeline as matcha_pipeline
    from robusteval.attacks.matcha import transfer as matcha_transfer
    from robusteval.attacks.matcha.config import SUCCESS_CHECKS, VARIANTS
    from robusteval.attacks.matcha.results import commands
    from robusteval.attacks.matcha.results import examples as matcha_examples
    from robusteval.attacks.matcha.results import section as matcha
    from robusteval.judges.semantic import AlwaysSameMeaning
    from robusteval.methods import method_named

    assert matcha_examples.OUTCOME_STAGE == commands.OUTCOME_STAGE == matcha_pipeline.OUTCOME_STAGE
    assert commands.TRANSFER_STAGE == matcha_transfer.OUTCOME_STAGE
    assert commands.MATCHA == matcha_pipeline.COMMAND == matcha_transfer.SOURCE_COMMAND
    # The registration spells the commands (it imports nothing but the registry).
    assert [getattr(method_named(name), "command", None) for name in ("matcha", "transfer")] == [
        commands.MATCHA, commands.TRANSFER]
    assert set(matcha.VARIANT_NAMES) == set(VARIANTS)  # Table 3 names every variant the attack knows
    assert set(matcha.SUCCESS_RULES) == set(SUCCESS_CHECKS)  # Table 1's note explains every success check
    assert AlwaysSameMeaning.name == matcha_examples.NO_SEMANTIC_JUDGE


def test_the_report_imports_no_torch() -> None:
    code = ("import sys, robusteval.report.build, robusteval.report.compare, robusteval.cli.runs; "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False"], done.stderr
