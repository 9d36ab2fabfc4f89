"""The prompt spread (issue 39, item 3): 12 generated formats are distinct and keep the question text
byte-identical, the statistics against a small case computed by hand, the worst case never above the min, and
a run on the tiny model with prompts from a file."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.config import ConfigError
from robusteval.evals.classification import ClassificationTemplate
from robusteval.evals.prompt_robustness import PromptSpreadConfig, prompt_spread
from robusteval.evals.prompt_robustness.formats import Format, format_template, read_prompts, sample_formats
from robusteval.evals.prompt_robustness.spread import spread_metrics
from robusteval.metrics.stats import wilson_interval

YESNO = str(resources.files("robusteval.data.samples").joinpath("yesno.jsonl"))


def test_twelve_formats_are_distinct_and_keep_the_question() -> None:
    template = ClassificationTemplate.load("yesno")
    formats = sample_formats(template, 12, seed=5)
    assert sample_formats(template, 12, seed=5) == formats and len(set(formats)) == 12
    question = "Is $5 {a} coin?\nSay: yes"
    rendered = set()
    for fmt in formats:
        other = format_template(template, fmt)
        filled = other.filled_prompt({"text": question})
        assert question in filled  # byte-identical
        rendered.add(other.filled_prefix() + filled)
        # The demonstrations keep their questions and answers; the instruction is kept.
        assert other.filled_prefix().startswith("Answer each question with one word: yes or no.\n\n")
        assert "Is ice colder than boiling water?" in other.filled_prefix()
    assert len(rendered) == 12
    assert format_template(template, Format()) is template


def test_spread_statistics_against_a_hand_computed_case() -> None:
    correct = {"a": [True, True, False, True], "b": [True, False, False, True], "c": [False, True, True, True]}
    got = spread_metrics(correct, seed=0, n_resamples=500)
    assert got["prompts"]["a"]["acc"] == 0.75 and got["prompts"]["b"]["acc"] == 0.5
    assert got["prompts"]["b"]["acc_ci95"] == wilson_interval(2, 4)
    assert (got["min"], got["argmin"], got["max"], got["argmax"]) == (0.5, "b", 0.75, "a")
    assert got["mean"] == pytest.approx(2 / 3) and got["spread"] == 0.25
    # Worst case: only the last question is right under every prompt; best case: every question under some.
    assert got["worst_case_acc"] == 0.25 and got["worst_case_acc_ci95"] == wilson_interval(1, 4)
    assert got["best_case_acc"] == 1.0
    assert got["worst_case_acc"] <= got["min"]
    lo, hi = got["spread_ci95"]
    assert 0 <= lo < hi <= 1
    same = spread_metrics({"a": [True, False], "b": [True, False]}, seed=0, n_resamples=100)
    assert same["spread"] == 0 and same["spread_ci95_method"].startswith("newcombe")
    assert same["spread_ci95"][1] > same["spread_ci95"][0]  # never zero width


def test_prompts_file_lines_and_json(tmp_path: Path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("Reply yes or no to each question.\n\n"
                    + json.dumps({"name": "upper", "casing": "upper", "separator": " - "}) + "\n", encoding="utf-8")
    choices = read_prompts(str(path))
    assert [c.name for c in choices] == ["file1", "upper"]
    assert choices[0].instruction == "Reply yes or no to each question." and choices[1].fmt.casing == "upper"
    (tmp_path / "bad.jsonl").write_text('{"casing": "shouting"}\n', encoding="utf-8")
    with pytest.raises(Exception, match="casing"):
        read_prompts(str(tmp_path / "bad.jsonl"))


def test_spread_run_on_the_tiny_model(tiny_backend: Any, tmp_path: Path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("Reply to each question with yes or no.\n", encoding="utf-8")
    config = PromptSpreadConfig(data=rv.DataSpec("jsonl", YESNO, answer_type="label", limit=6), n_formats=3,
                                prompts_file=str(path), label_mode="soft", bootstrap=200)
    summary = prompt_spread(config, tiny_backend, tmp_path / "run", batch_size=8)
    assert summary["n"] == 6 and summary["n_prompts"] == 5
    assert summary["worst_case_acc"] <= summary["min"] <= summary["mean"] <= summary["max"]
    assert summary["spread_ci95"] is not None
    with pytest.raises(ConfigError, match="n_formats"):
        PromptSpreadConfig(data=rv.DataSpec("jsonl", YESNO, answer_type="label"), n_formats=0)
