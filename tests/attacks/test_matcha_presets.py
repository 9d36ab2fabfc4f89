"""MATCHA's presets (issue 38): data that fills the settings a run leaves unset, recorded in the identity by value;
the search knobs are --config keys whose flags still work, hidden and deprecated; --help stays narrow."""

from __future__ import annotations

import argparse
import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.attacks.matcha.config import MatchaRunConfig
from robusteval.attacks.matcha.config_presets import PRESETS, preset_values
from robusteval.attacks.matcha.pipeline import matcha_identity
from robusteval.cli.configflags import config_from_args, full_help
from robusteval.cli.main import build_parser, main, parse_args
from robusteval.config import CONFIG_KEY
from robusteval.data.spec import DataSpec
from robusteval.judging import JudgeOptions
from robusteval.models.generation import GenerationOptions
from robusteval.store import RunStore
from robusteval.text.thinking import ReasoningFormat

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
BASE = ["attack", "matcha", "--model", "hf:./m", "--dataset", "jsonl", "--data-file", SAMPLE, "--answer-type",
        "number", "--out", "runs/x"]


def config_of(argv: list[str]) -> MatchaRunConfig:
    args = parse_args(argv)
    config = config_from_args(args.attack.config_type, args)
    assert isinstance(config, MatchaRunConfig)
    return config


def identity_of(config: MatchaRunConfig) -> dict[str, Any]:
    return matcha_identity(config, None, config.data.load(), reasoning=ReasoningFormat())


def subparser(*names: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def test_a_preset_fills_what_is_unset_and_a_flag_or_config_key_wins(tmp_path: Path) -> None:
    fast = config_of([*BASE, "--preset", "fast"])
    assert (fast.steps, fast.max_new_tokens, fast.max_redraws, fast.max_attack_tokens) == (1, 64, 1, 2048)
    assert config_of([*BASE, "--preset", "fast", "--max-new-tokens", "300"]).max_new_tokens == 300
    toml = tmp_path / "run.toml"
    toml.write_text('preset = "fast"\nsteps = 3\nmax_redraws = 0\n', encoding="utf-8")
    from_file = config_of([*BASE, "--config", str(toml)])
    assert (from_file.preset, from_file.steps, from_file.max_redraws, from_file.max_new_tokens) == ("fast", 3, 0, 64)
    # No preset: the defaults as before (256 tokens, 5 redraws); the API fills the same way.
    plain = config_of(BASE)
    assert (plain.steps, plain.max_new_tokens, plain.max_redraws, plain.counting) == (None, 256, 5, None)
    api = rv.MatchaRunConfig(data=DataSpec("gsm8k", SAMPLE, answer_type="number"), preset="authors", steps=2)
    assert (api.steps, api.topk_ratio, api.epsilon, api.resolved_counting()) == (2, 0.25, 0.005, "authors")
    assert api.resolved_unreadable() == "authors-fallback" and api.resolved_replacement_gate() == "authors"


def test_paper_and_authors_differ_where_the_paper_and_the_code_do() -> None:
    data = DataSpec("strategyqa", SAMPLE, answer_type="number")
    paper = rv.MatchaRunConfig(data=data, preset="paper")
    authors = rv.MatchaRunConfig(data=data, preset="authors")
    # The paper's k and eps per dataset and its 500-question StrategyQA sample; the code's one default for all.
    assert (paper.topk_ratio, paper.epsilon, paper.sample_size()) == (0.5, 0.03, 500)
    assert (authors.topk_ratio, authors.epsilon, authors.sample_size()) == (0.25, 0.005, None)
    assert paper.hyperparameters().answer_loss == "n3" and paper.resolved_unreadable() == "abstain"
    # The token level's checkpoint and replacement rules are left unset at the embedding level (refused there).
    embedding = rv.MatchaRunConfig(data=data, preset="authors", level="embedding")
    assert embedding.success_check is None and embedding.replacement_gate is None
    assert embedding.hyperparameters().eps_base == "prompt+response"


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("level", ["token", "embedding"])
@pytest.mark.parametrize("dataset", ["gsm8k", "singleeq", "strategyqa", "jsonl"])
def test_every_preset_builds_and_sets_only_fields_it_can_tell_unset(name: str, level: str, dataset: str) -> None:
    fields = {f.name: f for f in (*dataclasses.fields(MatchaRunConfig), *dataclasses.fields(GenerationOptions),
                                   *dataclasses.fields(JudgeOptions))}
    values = preset_values(name, dataset, level)
    for key in values:
        assert key in fields, key
        assert fields[key].default is None, f"{key}: a preset can only fill a setting whose default is None"
    config = rv.MatchaRunConfig(data=DataSpec(dataset, SAMPLE, answer_type="number"), level=level, preset=name)
    assert {key: getattr(config, key) for key in values} == values
    config.hyperparameters()  # resolves and validates


def test_the_identity_records_resolved_values_not_the_preset_name(tmp_path: Path) -> None:
    fast = config_of([*BASE, "--preset", "fast"])
    toml = tmp_path / "same.toml"
    toml.write_text("steps = 1\nmax_new_tokens = 64\nmax_redraws = 1\nmax_attack_tokens = 2048\n", encoding="utf-8")
    spelled = config_of([*BASE, "--config", str(toml)])
    assert identity_of(fast) == identity_of(spelled)
    assert identity_of(fast)["steps"] == 1 and identity_of(fast)["preset"] == "none"
    # Another resolved value is another identity; a run without a preset keeps the identity it always had.
    assert identity_of(config_of([*BASE, "--preset", "fast", "--max-new-tokens", "65"])) != identity_of(fast)
    plain = identity_of(config_of(BASE))
    assert plain["max_new_tokens"] == 256 and plain["max_redraws"] == 5 and plain["steps"] is None


def test_a_deprecated_flag_works_and_says_what_replaces_it_once(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text("topk_ratio = 0.5\n", encoding="utf-8")  # a --config key: no notice
    config = config_of([*BASE, "--config", str(toml), "--steps", "3", "--no-random-start", "--min-correct", "2"])
    assert (config.steps, config.random_start, config.min_correct, config.topk_ratio) == (3, False, 2, 0.5)
    assert capsys.readouterr().err.splitlines() == [
        "robusteval: --steps is deprecated (accepted until the next release): set steps in --config or use --preset paper|authors|fast",
        "robusteval: --no-random-start is deprecated (accepted until the next release): set random_start = false in --config",
        "robusteval: --min-correct is deprecated (accepted until the next release): set min_correct in --config",
    ]
    config_of([*BASE, "--config", str(toml)])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", [("attack", "matcha"), ("sweep", "matcha")])
def test_help_shows_at_most_35_flags_and_help_all_every_one(command: tuple[str, ...]) -> None:
    parser = subparser(*command)
    shown = [line for line in parser.format_help().splitlines() if line.lstrip().startswith("-")
             and line.startswith("  -")]
    assert len(shown) <= 35, len(shown)
    assert "docs/config-reference.md" in parser.format_help()
    every = full_help(parser)
    flags = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    assert all(flag in every for flag in flags)
    # Every config key whose flag is hidden is still documented (in --help-all and the config reference).
    for field in dataclasses.fields(MatchaRunConfig):
        if field.metadata.get("cli") == CONFIG_KEY:
            flag = field.metadata.get("negate") or "--" + field.name.replace("_", "-")
            assert flag not in parser.format_help() and flag in every


@pytest.mark.slow
def test_a_preset_run_resumes_under_the_same_settings_given_one_by_one(tiny_trained_dir: Path,
                                                                       tmp_path: Path) -> None:
    out = tmp_path / "fast"
    base = ["attack", "matcha", "--model", f"hf:{tiny_trained_dir}", "--dataset", "jsonl", "--data-file", SAMPLE,
            "--answer-type", "number", "--target-answer", "clean", "--limit", "2", "--out", str(out)]
    assert main([*base, "--preset", "fast"]) == 0
    toml = tmp_path / "same.toml"
    toml.write_text("steps = 1\nmax_new_tokens = 64\nmax_redraws = 1\nmax_attack_tokens = 2048\n", encoding="utf-8")
    first = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert main([*base, "--config", str(toml)]) == 0  # the same resolved settings: the same run, resumed
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["sr"] == first["sr"]
    assert RunStore.open_existing(out).identity["steps"] == 1
    assert main([*base, "--preset", "fast", "--max-new-tokens", "32"]) == 2  # another setting: refused
