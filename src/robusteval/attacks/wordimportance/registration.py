"""The word-importance attack's registration (light: read by ``robusteval --help``; it imports only
:mod:`robusteval.methods`). Its runs record ``attack wordimportance``; ORS, a score over several of its runs,
is its study column and shows in its report section."""

from __future__ import annotations

from robusteval.methods import MethodSpec, StudyTable, register_method

_PACKAGE = "robusteval.attacks.wordimportance"

register_method(MethodSpec(
    name="wordimportance",
    command="attack wordimportance",  # pipeline.COMMAND (tests/attacks/test_wordimportance_registration.py)
    summary="black-box hard-label attack: rank words, then perturb them in order (and ORS over its runs)",
    section="hardlabel",
    runner=f"{_PACKAGE}.study_method:method",
    results=f"{_PACKAGE}.results:RESULTS",
    stages=(f"{_PACKAGE}.pipeline",),
    # Its runs' command is built by the attack group (cli/attack.py); its own is ``robusteval ors``.
    cli="robusteval.cli.ors",
    headlines=(("asr[max]", "lower"),),
    order=50,
    configs=(("ors", f"{_PACKAGE}.ors:OrsConfig"),),
    # The constants of ors.OrsConfig a study may set in its [ors] table.
    study_table=StudyTable("ors", ("q", "eta", "beta_cap"), check=f"{_PACKAGE}.ors:check_study_options"),
))
