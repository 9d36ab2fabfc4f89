"""The token attack refuses inputs whose per-step cost would exceed its budget: an example whose attacked sequence
(the prompt with its insertions and the teacher-forced completion) is over ``max_attack_tokens`` is skipped with
its reason, counted in ``skip_reasons``, and never attacked (a 10,000-token question against a 64k-context model
ran over 15 minutes). 0 lifts the budget. A real tiny model, the bundled sample."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

import robusteval as rv
from robusteval.attacks.matcha.config import DEFAULT_ATTACK_TOKENS, OVER_TOKEN_BUDGET

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def _config(**budget: int) -> rv.MatchaRunConfig:
    return rv.MatchaRunConfig(rv.DataSpec("jsonl", SAMPLE, limit=3, answer_type="number"), target_answer="clean",
                              judging=rv.JudgeOptions(semantic_judge="none"), steps=1,
                              generation=rv.GenerationOptions(max_new_tokens=24), **budget)


def test_an_example_over_the_token_budget_is_skipped_with_its_reason(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = rv.load_model(f"hf:{tiny_trained_dir}")
    unlimited = rv.attack_matcha(_config(max_attack_tokens=0), model, tmp_path / "unlimited", batch_size=4)
    assert unlimited["n_attacked"] >= 1 and OVER_TOKEN_BUDGET not in unlimited["skip_reasons"]
    sizes = [len(r["question_ids"]) + r["prefix_length"] + len(r["head_ids"]) + len(r["tail_ids"])
             + len(r["continuation_ids"]) for r in rv.load_run(tmp_path / "unlimited").records("matcha_clean")]
    capsys.readouterr()
    # A budget below every example's sequence: the clean pass runs, nothing is attacked, each skip says why.
    budget = min(sizes) - 1
    capped = rv.attack_matcha(_config(max_attack_tokens=budget), model, tmp_path / "capped", batch_size=4)
    assert capped["n_attacked"] == 0
    assert capped["skip_reasons"][OVER_TOKEN_BUDGET] == unlimited["n_attacked"]
    assert "matcha_attack" not in rv.load_run(tmp_path / "capped").stages
    said = [line for line in capsys.readouterr().err.splitlines() if "max_attack_tokens" in line]
    assert len(said) == unlimited["n_attacked"], said
    assert f"over max_attack_tokens={budget:,}; skipped (a larger max_attack_tokens, or 0, lifts" in said[0]
    # Set, it is part of the run identity; unset (the default budget), identities stay as they were.
    assert rv.load_run(tmp_path / "capped").identity["max_attack_tokens"] == budget
    assert rv.load_run(tmp_path / "unlimited").identity["max_attack_tokens"] == 0
    assert max(sizes) < DEFAULT_ATTACK_TOKENS  # the default leaves ordinary questions alone


def test_the_budget_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "matcha.md").read_text(encoding="utf-8")
    assert "`max_attack_tokens`" in doc and f"{DEFAULT_ATTACK_TOKENS:,}" in doc
