"""The classifying methods (``robustness``, ``attack wordimportance``) read the model's trace budget from the shared
reasoning block (``ReasoningOptions.max_thinking_tokens``, nested as ``thinking``; issue 38, item 3): declared
once, checked once, the flat name still read and given, and the run identity the one of before."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import cli_inproc
from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.config import ConfigError, identity_fields
from robusteval.data.spec import DataSpec
from robusteval.evals.robustness.config import RobustnessConfig
from robusteval.text.thinking import REASONING_KEYS, ReasoningOptions

D = DataSpec("gsm8k")
#: (config, its other keywords, max_thinking_tokens, sha256[:16] of its identity fields at the commit before the
#: block was nested, faf32a7).
CASES: dict[str, tuple[type, dict[str, Any], int | None, str]] = {
    "robustness": (RobustnessConfig, {"data": D, "sets": "C-swap"}, None, "812fe37ecdb5b68e"),
    "robustness_64": (RobustnessConfig, {"data": D, "sets": "C-swap"}, 64, "0d558efe13a5d526"),
    "wordimportance": (WordImportanceRunConfig, {"data": D, "method": "C-swap"}, None, "a6f4f6bcb751f997"),
    "wordimportance_64": (WordImportanceRunConfig, {"data": D, "method": "C-swap", "chat": True}, 64,
                          "87651b8087b8938a"),
}


def _hash(config: Any) -> str:
    return hashlib.sha256(json.dumps(identity_fields(config), sort_keys=True, default=str).encode()).hexdigest()[:16]


@pytest.mark.parametrize("config_type", [RobustnessConfig, WordImportanceRunConfig])
def test_no_reasoning_setting_is_declared_twice(config_type: type) -> None:
    own = {field.name for field in dataclasses.fields(config_type)}
    assert own & set(REASONING_KEYS) == set() and "thinking" in own


@pytest.mark.parametrize("case", sorted(CASES))
def test_flat_or_nested_the_identity_is_the_one_of_before(case: str) -> None:
    config_type, other, budget, pinned = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        other = {**other, **({"chat": True} if "chat" in other else {})}
        nested = config_type(**other, thinking=ReasoningOptions(max_thinking_tokens=budget))
        flat = config_type(**other, **({} if budget is None else {"max_thinking_tokens": budget}))
    assert flat == nested and flat.max_thinking_tokens == budget and _hash(nested) == pinned


def test_a_bad_budget_is_refused_once_naming_it_and_other_reasoning_keys_are_not_settings() -> None:
    with pytest.raises(ConfigError, match=r"^ReasoningOptions.max_thinking_tokens: must be a number >= 1, got 0$"):
        RobustnessConfig(data=D, sets="C-swap", thinking=ReasoningOptions(max_thinking_tokens=0))
    with pytest.raises(ConfigError, match=r"^WordImportanceRunConfig.max_thinking_tokens: must be a number >= 1"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        WordImportanceRunConfig(data=D, method="C-swap", max_thinking_tokens=0)
    with pytest.raises(ConfigError, match=r"^RobustnessConfig.reasoning: is not a setting of RobustnessConfig"):
        RobustnessConfig(data=D, sets="C-swap", thinking=ReasoningOptions(reasoning="none"))


def test_the_command_line_keeps_its_flag_and_names_it(tmp_path: Path) -> None:
    result = cli_inproc("robustness", "--dataset", "ocnli", "--sets", "C-swap", "--max-thinking-tokens", "0",
                        "--model", "hf:none", "--out", str(tmp_path / "never"))
    errors = [line for line in result.stderr.splitlines() if line.startswith("robusteval: error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert errors == ["robusteval: error: --max-thinking-tokens: must be a number >= 1, got 0"], result.stderr
    shown = cli_inproc("robustness", "--help").stdout
    assert not (tmp_path / "never").exists() and "--max-thinking-tokens" in shown and "--think-tags" not in shown and "--reasoning " not in shown
