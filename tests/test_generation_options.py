"""One GenerationOptions block shared by every method's config (issue 38, item 3): declared once, the flat names
still accepted for one release, and the run identity unchanged for the same values."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers.configkeys import leaf_keys
from robusteval.attacks.matcha.config import MatchaRunConfig
from robusteval.attacks.matcha.transfer import TransferConfig
from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.cli.main import parse_args
from robusteval.config import ConfigError, identity_fields
from robusteval.data.spec import DataSpec
from robusteval.evals.answer_first.pipeline import EvalConfig
from robusteval.evals.prompt_options import PROMPT_KEYS, PromptOptions
from robusteval.evals.prompt_robustness.config import (
    PromptRobustnessConfig,
    PromptSearchConfig,
    PromptSpreadConfig,
)
from robusteval.evals.robustness.pipeline import RobustnessConfig
from robusteval.judging import JUDGE_KEYS, JudgeOptions
from robusteval.models.generation import GENERATION_KEYS, GenerationOptions
from robusteval.studies.configref import sections
from robusteval.studies.sweep import parse_grid
from robusteval.variants.configs import VariantsEvalConfig

D = DataSpec("gsm8k")
#: (config, its other keywords, its generation keywords given flat, sha256[:16] of its identity fields before the
#: block existed: computed with the flat configs of the commit before it).
CASES: dict[str, tuple[type, dict[str, Any], dict[str, Any], str]] = {
    "matcha": (MatchaRunConfig, {"data": D}, {}, "1bc0acc65527ddf0"),
    "matcha_chat": (MatchaRunConfig, {"data": D}, {"chat": True, "system_prompt": "s", "max_new_tokens": 64},
                    "1f0a2c8ff2a21596"),
    "eval": (EvalConfig, {"data": D}, {}, "12c46c35c7ade387"),
    "eval_chat": (EvalConfig, {"data": D}, {"chat": True, "system_prompt": "", "max_new_tokens": 32},
                  "b523a02c34f67fe9"),
    "variants": (VariantsEvalConfig, {"instances": "x.jsonl"}, {}, "866d0f1edcf683d9"),
    "variants_t": (VariantsEvalConfig, {"instances": "x.jsonl"},
                   {"temperature": 0.5, "top_p": 0.9, "max_new_tokens": 100, "chat": True}, "260890a5b2a7671e"),
    "robustness": (RobustnessConfig, {"data": D, "sets": "C-swap"}, {}, "812fe37ecdb5b68e"),
    "robustness_chat": (RobustnessConfig, {"data": D, "sets": "C-swap"}, {"chat": True, "system_prompt": "s"},
                        "152492e679b28e3c"),
    "wordimportance": (WordImportanceRunConfig, {"data": D, "method": "C-swap"}, {}, "a6f4f6bcb751f997"),
    "wordimportance_t": (WordImportanceRunConfig, {"data": D, "method": "C-swap"},
                         {"temperature": 0.3, "chat": True}, "be797f6149b77120"),
    "prompt": (PromptRobustnessConfig, {"data": D, "methods": "C-swap"}, {}, "1ea2aa0da0abae75"),
    "search": (PromptSearchConfig, {"data": D, "methods": "C-swap"}, {"chat": True}, "da313c2d205db31d"),
    "spread": (PromptSpreadConfig, {"data": D, "n_formats": 2}, {}, "27625fa41bf521a6"),
    "transfer": (TransferConfig, {"source": "d"}, {}, "2855abaa9da314fe"),
    "transfer_t": (TransferConfig, {"source": "d"},
                   {"temperature": 0.0, "max_new_tokens": 12, "chat": True, "system_prompt": "s"}, "f408fb625397a6a2"),
}


def _hash(config: Any) -> str:
    text = json.dumps(identity_fields(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(CASES))
def test_flat_and_nested_give_the_same_config_and_the_identity_of_before(case: str) -> None:
    config_type, other, generation, pinned = CASES[case]
    nested = config_type(**other, generation=GenerationOptions(**generation))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flat = config_type(**other, **generation)
    assert flat == nested
    assert _hash(nested) == pinned
    for name, value in generation.items():  # the flat reads forward to the block
        assert getattr(flat, name) == value == getattr(flat.generation, name)
    notices = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(notices) == (1 if generation else 0)
    if generation:
        assert "generation=GenerationOptions(" in notices[0] and "\n" not in notices[0]


@pytest.mark.parametrize("title", [title for title, _ in sections()])
def test_no_method_config_declares_a_shared_setting_itself_or_a_key_twice(title: str) -> None:
    config_type = dict(sections())[title]
    own = {f.name for f in dataclasses.fields(config_type)}
    shared = set(GENERATION_KEYS) | set(JUDGE_KEYS) | set(PROMPT_KEYS)
    assert not own & shared, f"{title}: declares {sorted(own & shared)} itself"
    twice = [key for key, n in Counter(leaf_keys(config_type)).items() if n > 1]
    assert not twice, f"{title}: {twice} declared twice"


def test_a_method_refuses_a_generation_setting_it_does_not_read_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"EvalConfig.temperature: is not a setting of EvalConfig"):
        EvalConfig(data=D, generation=GenerationOptions(temperature=0.5))
    with pytest.raises(ConfigError, match=r"GenerationOptions.max_new_tokens: must be a number >= 1"):
        EvalConfig(data=D, generation=GenerationOptions(max_new_tokens=0))
    with pytest.raises(ConfigError, match=r"system_prompt: needs chat=True"):
        MatchaRunConfig(data=D, generation=GenerationOptions(system_prompt="s"))
    # the method's default fills what the block leaves unset; a preset fills MATCHA's
    assert EvalConfig(data=D, generation=GenerationOptions(chat=True)).max_new_tokens == 256
    assert VariantsEvalConfig(instances="x.jsonl").max_new_tokens == 2048
    assert MatchaRunConfig(data=D, preset="fast").max_new_tokens == 64
    assert MatchaRunConfig(data=D, preset="fast", generation=GenerationOptions(max_new_tokens=9)).max_new_tokens == 9


@pytest.mark.parametrize("text", ["[generation]\nmax_new_tokens = 64\nchat = true\n",
                                  "max_new_tokens = 64\nchat = true\n"])
def test_a_config_file_takes_the_block_as_a_table_or_flat(tmp_path: Path, text: str) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text(text, encoding="utf-8")
    args = parse_args(["eval", "--model", "hf:x", "--dataset", "gsm8k", "--out", str(tmp_path / "o"), "--config", str(toml)])
    assert (args.max_new_tokens, args.chat) == (64, True)


def test_a_config_files_table_refuses_a_key_it_does_not_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text("[generation]\nmax_new_token = 64\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"max_new_token.*did you mean max_new_tokens"):
        parse_args(["eval", "--model", "hf:x", "--dataset", "gsm8k", "--out", str(tmp_path / "o"), "--config", str(toml)])


def test_a_sweep_grid_names_a_generation_setting_flat_or_by_its_path() -> None:
    assert parse_grid(["generation.max_new_tokens=64,128"], MatchaRunConfig) == {"max_new_tokens": [64, 128]}
    assert parse_grid(["max_new_tokens=64,128", "steps=1"], MatchaRunConfig) == {"max_new_tokens": [64, 128],
                                                                               "steps": [1]}
    from robusteval.config import with_options

    config = with_options(MatchaRunConfig(data=D), {"max_new_tokens": 64, "steps": 2, "seed": 3})
    assert (config.max_new_tokens, config.steps, config.seed) == (64, 2, 3)


@pytest.mark.parametrize(("run", "hyper"), [
    ({"steps": -1}, {"steps": -1}),
    ({"epsilon": 0.0, "level": "embedding"}, {"epsilon": 0.0, "level": "embedding"}),
    ({"level": "embedding", "variant": "gcg-suffix"}, {"level": "embedding", "variant": "gcg-suffix"}),
    ({"level": "embedding", "success_check": "insertion-and-final"},
     {"level": "embedding", "success_check": "insertion-and-final"}),
    ({"replacement_gate": "corrected"}, {"replacement_gate": "corrected"}),
    ({"replacement_positions": "authors", "counting": "authors", "level": "embedding"},
     {"replacement_positions": "authors", "counting": "authors", "level": "embedding"}),
])
def test_matcha_hyperparameters_are_checked_in_one_place(run: dict[str, Any], hyper: dict[str, Any]) -> None:
    """MatchaRunConfig refuses a bad hyper-parameter with MatchaConfig's own check, in its own field names (it
    re-checked them itself, in other words)."""
    from robusteval.attacks.matcha.config import MatchaConfig

    with pytest.raises(ConfigError) as own:
        MatchaConfig(**hyper)
    with pytest.raises(ConfigError) as through:
        MatchaRunConfig(data=D, **run)
    assert through.value.config_type is MatchaRunConfig
    assert through.value.problem == own.value.problem
    assert through.value.field == own.value.field


@pytest.mark.parametrize("table", ["[methods.eval.generation]\nmax_new_tokens = 64\nchat = true\n",
                                   "[methods.eval]\nmax_new_tokens = 64\nchat = true\n"])
def test_a_study_file_takes_the_block_as_a_sub_table_or_flat(tmp_path: Path, table: str) -> None:
    from robusteval.studies.plan import load_study

    data = tmp_path / "q.jsonl"
    data.write_text('{"id": "1", "question": "1+1?", "answer": "2"}\n', encoding="utf-8")
    study = tmp_path / "study.toml"
    study.write_text(f'[[models]]\nspec = "hf:x"\n[datasets.d]\ndataset = "jsonl"\ndata_file = "{data}"\n'
                     f'answer_type = "number"\n{table}', encoding="utf-8")
    (cell,) = load_study(study).cells
    assert cell.config.generation == GenerationOptions(chat=True, max_new_tokens=64)


@pytest.mark.parametrize(("config_type", "other", "judging", "pinned"), [
    (MatchaRunConfig, {"data": D}, {"judge": "arith+grounding", "semantic_judge": "none", "judge_chat": True,
                                    "judge_retries": 2, "judge_max_thinking_tokens": 64}, "d1b2cb9b8a423082"),
    (TransferConfig, {"source": "d"}, {"judge": "arith", "judge_chat": True}, "783b8b12dcc59ac8"),
])
def test_the_judge_block_flat_or_nested_keeps_the_identity_of_before(config_type: type, other: dict[str, Any],
                                                                      judging: dict[str, Any], pinned: str) -> None:
    nested = config_type(**other, judging=JudgeOptions(**judging))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = config_type(**other, **judging)
    assert flat == nested and _hash(nested) == pinned
    assert flat.judge == judging["judge"] and flat.judge_chat is True


def test_the_judge_block_checks_its_specs_once_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^JudgeOptions.judge: "):
        JudgeOptions(judge="nosuchkind:x")
    with pytest.raises(ConfigError, match=r"^TransferConfig.semantic_judge: is not a setting of TransferConfig"):
        TransferConfig(source="d", judging=JudgeOptions(semantic_judge="none"))
    assert MatchaRunConfig(data=D).judging == JudgeOptions(judge="arith", semantic_judge="none")
    assert TransferConfig(source="d").judge is None  # the source run's


@pytest.mark.parametrize(("config_type", "other", "prompt", "pinned"), [
    (EvalConfig, {"data": D}, {"exemplars": "math"}, "47589992b8cdf10b"),
    (MatchaRunConfig, {"data": D}, {"exemplars": "yesno"}, "365190d589b6f4fe"),
    (TransferConfig, {"source": "d"}, {"exemplars": "math"}, "2855abaa9da314fe"),  # not recorded: its prefix hash is
    (RobustnessConfig, {"data": D, "sets": "C-swap"}, {"template": "yesno"}, "23a82654aba23ae9"),
])
def test_the_prompt_block_flat_or_nested_keeps_the_identity_of_before(config_type: type, other: dict[str, Any],
                                                                       prompt: dict[str, Any], pinned: str) -> None:
    nested = config_type(**other, prompt=PromptOptions(**prompt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = config_type(**other, **prompt)
    assert flat == nested and _hash(nested) == pinned
    for name, value in prompt.items():
        assert getattr(flat, name) == value


def test_the_prompt_block_checks_its_values_once_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^PromptOptions.template: template nosuch: no such file"):
        PromptOptions(template="nosuch")
    with pytest.raises(ConfigError, match=r"^EvalConfig.exemplars: "), pytest.warns(DeprecationWarning):
        EvalConfig(data=D, exemplars="nosuch")  # the flat keyword, deprecated: named as the caller named it
    with pytest.raises(ConfigError, match=r"^EvalConfig.template: is not a setting of EvalConfig"):
        EvalConfig(data=D, prompt=PromptOptions(template="yesno"))
