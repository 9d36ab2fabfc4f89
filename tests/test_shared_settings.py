"""Settings several configs share are declared once (issue 38, item 3): the configs inherit the very dataclass
field (its flag, help, choices and identity mark) from one small settings class, and check its value in one place.
The run identities, the configs' values and each command's flags are the ones the separate declarations made
(pinned: computed with the commit before, faf32a7)."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest

from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.attacks.wordsearch.settings import RankSettings
from robusteval.cli.main import build_parser
from robusteval.config import ConfigError, identity_fields
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_robustness.config import (
    PromptRobustnessConfig,
    PromptSearchConfig,
    PromptSpreadConfig,
)
from robusteval.evals.robustness.config import RobustnessConfig
from robusteval.evals.summary_settings import BootstrapSettings, LabelModeSettings
from robusteval.models.generation import GenerationOptions
from robusteval.variants.configs import (
    CheckConfig,
    InstancesFile,
    InstantiateConfig,
    ScoreConfig,
    TemplateFiles,
    ValidateConfig,
    VariantsEvalConfig,
)


def _data() -> DataSpec:
    return DataSpec("jsonl", "x.jsonl", answer_type="label")


#: name -> (config class, its keywords, sha256[:16] of its identity fields and of all its values). The values of
#: the robustness and word-importance configs are recomputed where their max_thinking_tokens moved into the nested
#: thinking block (the same merge); their identities are the ones of before.
CASES: dict[str, tuple[type, dict[str, Any], tuple[str, str]]] = {
    "pr_default": (PromptRobustnessConfig, {"methods": "C-keyboard,W-synonym"},
                   ("d5d432d48bfc4898", "b6410031da40e488")),
    "pr_set": (PromptRobustnessConfig, {"methods": ("C-swap",), "label_mode": "soft", "bootstrap": 50,
                                        "bootstrap_seed": 3, "seed": 7, "prompts_per_method": 2, "target": "format"},
               ("a5cc0ceb1d63e4c7", "3b39d9a65045c44a")),
    "search_default": (PromptSearchConfig, {"methods": "W-synonym"}, ("12f79065d52ff1b1", "d557593bd4d3ead9")),
    "search_set": (PromptSearchConfig, {"methods": "C-keyboard", "label_mode": "soft", "bootstrap": 10,
                                        "bootstrap_seed": 9, "seed": 2, "budget": 40, "rank": False},
                   ("eb774d5cc69fc733", "e029e13ac39e4f46")),
    "spread_default": (PromptSpreadConfig, {}, ("534b2cef10e0b961", "d729079893eb3c5e")),
    "spread_set": (PromptSpreadConfig, {"n_formats": 3, "label_mode": "soft", "bootstrap": 0, "bootstrap_seed": 5,
                                        "seed": 11}, ("19a44936b8deb44d", "c6d96bcd451f8145")),
    "rob_default": (RobustnessConfig, {"sets": "C-keyboard"}, ("26e6b0ab28fd8d97", "fe282cc5037a4042")),
    "rob_set": (RobustnessConfig, {"sets": "C-keyboard,W-synonym", "label_mode": "soft", "bootstrap": 100,
                                   "bootstrap_seed": 4, "seed": 8, "min_changed": 0},
                ("3587ce3556e61dc4", "1086be92650d8b18")),
    "wi_default": (WordImportanceRunConfig, {"method": "C-keyboard"}, ("aa2ec01f8ffd602a", "d9d4c4ee0abca2a8")),
    "wi_set": (WordImportanceRunConfig, {"method": "combined", "rank": False, "budget": 50, "seed": 3,
                                         "rates": (0.1,)}, ("f64a732952c111e1", "117cab73802ac447")),
    "inst_default": (InstantiateConfig, {"templates": "a.yaml"}, ("393d4aaa8c562480", "393d4aaa8c562480")),
    "inst_set": (InstantiateConfig, {"templates": ("a.yaml", "b.csv"), "prefix_ids": True, "n": 3, "seed": 1,
                                     "compat": "var-math"}, ("d52e563c7cdc2d06", "d52e563c7cdc2d06")),
    "validate": (ValidateConfig, {"templates": "a.yaml,b.yaml", "prefix_ids": True},
                 ("69c93e5d576e8997", "69c93e5d576e8997")),
    "check": (CheckConfig, {"templates": ["a.yaml"], "prefix_ids": True, "n": 2, "draws": 10},
              ("ac59c81cdc8fd95d", "ac59c81cdc8fd95d")),
    "score": (ScoreConfig, {"instances": "i.jsonl", "predictions": "p.jsonl"}, ("c2b9944f6cc74c85", "e9f5350b00c414d7")),
    "veval_default": (VariantsEvalConfig, {"instances": "i.jsonl"}, ("d08ed9a21e7d56c1", "1c15280403f8b7c8")),
    "veval_set": (VariantsEvalConfig, {"instances": "i.jsonl", "samples": 4, "seed": 5,
                                       "generation": GenerationOptions(max_new_tokens=64, temperature=0.3)},
                  ("ad5d48f19519c7d4", "fb367db241045177")),
}

#: settings class -> the configs that inherit it.
SHARED: dict[type, tuple[type, ...]] = {
    BootstrapSettings: (PromptRobustnessConfig, PromptSearchConfig, PromptSpreadConfig, RobustnessConfig),
    LabelModeSettings: (PromptRobustnessConfig, PromptSpreadConfig, RobustnessConfig),
    RankSettings: (WordImportanceRunConfig, PromptSearchConfig),
    TemplateFiles: (InstantiateConfig, ValidateConfig),
    InstancesFile: (ScoreConfig, VariantsEvalConfig),
}

#: command path -> sha256[:16] of its flags (names, destinations, defaults, choices, types, metavars, and the help
#: of every flag but the shared settings', whose wording is now one; max_thinking_tokens: ReasoningOptions').
FLAGS = {("prompt-robustness",): "c96126b6bdc0222f", ("robustness",): "d92a51149352de2c",
         ("attack", "wordimportance"): "f70ba620449871f5", ("variants", "instantiate"): "4fecc54184694650",
         ("variants", "validate"): "61e7b074a6f4644e", ("variants", "check"): "c75c9364e2a1fdad",
         ("variants", "eval"): "d73f38d8cfcd9a16", ("variants", "score"): "9aef791568b7d959"}
SHARED_DESTS = {"bootstrap", "bootstrap_seed", "label_mode", "rank", "instances", "max_thinking_tokens"}


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _fields(config_type: type) -> dict[str, dataclasses.Field[Any]]:
    return {field.name: field for field in dataclasses.fields(config_type)}


def _build(config_type: type, keywords: dict[str, Any]) -> Any:
    needs_data = "data" in _fields(config_type)
    return config_type(**({"data": _data()} if needs_data else {}), **keywords)


@pytest.mark.parametrize("case", sorted(CASES))
def test_identities_and_values_are_those_of_the_separate_declarations(case: str) -> None:
    config_type, keywords, pinned = CASES[case]
    config = _build(config_type, keywords)
    assert (_hash(identity_fields(config)), _hash(dataclasses.asdict(config))) == pinned


@pytest.mark.parametrize("settings", list(SHARED), ids=lambda settings: settings.__name__)
def test_each_shared_setting_is_the_same_field_in_every_config(settings: type) -> None:
    for config_type in SHARED[settings]:
        for name, field in _fields(settings).items():  # inherited, not declared again
            assert _fields(config_type)[name] is field, (config_type.__name__, name)
    # check takes the template files as its arguments (its own templates field); the prefix switch is the same
    assert _fields(CheckConfig)["prefix_ids"] is _fields(TemplateFiles)["prefix_ids"]


def test_the_prompt_search_keeps_its_own_label_mode() -> None:
    # there the label mode is what the search lowers, so it is part of the run identity
    search, shared = (_fields(c)["label_mode"] for c in (PromptSearchConfig, LabelModeSettings))
    assert search is not shared and search.metadata["identity"] and not shared.metadata["identity"]
    assert search.metadata["choices"] == shared.metadata["choices"]


@pytest.mark.parametrize("config_type", SHARED[BootstrapSettings], ids=lambda c: c.__name__)
def test_a_bad_shared_value_is_refused_in_the_words_of_the_config_given(config_type: type) -> None:
    keywords = next(k for c, k, _ in CASES.values() if c is config_type)
    with pytest.raises(ConfigError) as bad:
        _build(config_type, {**keywords, "bootstrap": -1})
    assert (bad.value.config_type, bad.value.field) == (config_type, "bootstrap")
    assert bad.value.cli_message().startswith("--bootstrap: must be a number >= 0")
    if "label_mode" in _fields(config_type):
        with pytest.raises(ConfigError, match="label_mode: 'sof' is not one of hard, soft"):
            _build(config_type, {**keywords, "label_mode": "sof"})


def _subparser(path: Sequence[str]) -> argparse.ArgumentParser:
    parser = build_parser(list(path))
    for word in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


@pytest.mark.parametrize("path", list(FLAGS), ids=" ".join)
def test_each_command_keeps_its_flags(path: tuple[str, ...]) -> None:
    rows = sorted([sorted(a.option_strings), a.dest, repr(a.default), list(a.choices or ()), a.required,
                   repr(a.nargs), getattr(a.type, "__name__", repr(a.type)), a.metavar,
                   None if a.dest in SHARED_DESTS else a.help]
                  for a in _subparser(path)._actions if not isinstance(a, argparse._SubParsersAction))
    assert hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()[:16] == FLAGS[path]
