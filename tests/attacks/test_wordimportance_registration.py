"""The word-importance attack is one registered method: found by its registration.py, with the command its runs
record, its report section, its headline and direction, its stages, ORS as its study table and command."""

from __future__ import annotations

from robusteval.attacks.wordimportance import ors as ors_pipeline
from robusteval.attacks.wordimportance import pipeline
from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.attacks.wordimportance.results import RESULTS
from robusteval.attacks.wordimportance.results.ors import ORS_NAME
from robusteval.cli import ors as ors_cli
from robusteval.methods import method_named, method_of_command
from robusteval.studies.methods import get_method


def test_the_method_is_registered_with_its_command_section_and_headline() -> None:
    spec = method_named("wordimportance")
    assert spec is not None and method_of_command(pipeline.COMMAND) == spec
    assert (spec.command, spec.section, spec.headlines, spec.order) == (
        "attack wordimportance", "hardlabel", (("asr[max]", "lower"),), 50)
    assert spec.load_results() is RESULTS and spec.stages == ("robusteval.attacks.wordimportance.pipeline",)
    assert spec.cli == ors_cli.__name__
    # The study runs the attack's own config and pipeline, with the registration's headline.
    method = get_method("wordimportance")
    assert method is not None and method.headlines == spec.headlines
    assert method.config_type is WordImportanceRunConfig and method.data_kind == "label"


def test_ors_is_its_study_table_and_result_file() -> None:
    spec = method_named("wordimportance")
    assert spec is not None and spec.study_table is not None
    assert spec.study_table.name == "ors" and set(spec.study_table.keys) <= set(ors_pipeline.OrsConfig.__dataclass_fields__)
    assert [kind.name for kind in RESULTS.result_files] == [ORS_NAME] == [ors_pipeline.OUTPUT_NAME]
    assert [board.method for board in RESULTS.boards] == ["wordimportance", "ors"]
