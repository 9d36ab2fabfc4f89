"""The word-importance search's defaults and value checks are written once (issue 38): the attack's run config
and the search's own record take the same defaults and refuse the same values, each in its own words."""

from __future__ import annotations

from typing import Any

import pytest

from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.attacks.wordsearch.search import WordImportanceConfig
from robusteval.config import ConfigError
from robusteval.data.spec import DataSpec

D = DataSpec("jsonl", "x.jsonl", answer_type="label")


def test_the_run_config_and_the_search_record_default_alike() -> None:
    run, search = WordImportanceRunConfig(data=D, method="C-swap"), WordImportanceConfig()
    assert (run.rates, run.budget, run.n_samples, run.generation.sampling_temperature(), run.rank, run.max_drift) == (
        search.rates, search.budget, search.n_samples, search.temperature, search.rank, search.max_drift)


@pytest.mark.parametrize(("values", "field"), [({"budget": 0}, "budget"), ({"max_drift": -0.5}, "max_drift"),
                                               ({"confidence": "sample", "n_samples": 0}, "n_samples")])
def test_a_bad_search_value_is_refused_alike_naming_the_config_given(values: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as run:
        WordImportanceRunConfig(data=D, method="C-swap", **values)
    with pytest.raises(ConfigError) as search:
        WordImportanceConfig(**values)
    assert (run.value.config_type, search.value.config_type) == (WordImportanceRunConfig, WordImportanceConfig)
    assert run.value.field == search.value.field == field and run.value.problem == search.value.problem
    with pytest.raises(ConfigError, match=r"^WordImportanceConfig.rates: every rate must be in \(0, 1\]"):
        WordImportanceConfig(rates=(0.1, 1.5))
