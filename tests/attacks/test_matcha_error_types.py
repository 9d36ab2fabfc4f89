"""Every MATCHA success carries its error type (the judge that decided it, its raw output and detail); the
summary gives their distribution; a re-run recomputes nothing, and the LLM classifier's answers are cached."""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.searchconfig import search_config
from robusteval.cli.main import main
from robusteval.judges import JUDGE_STAGE
from robusteval.judges.errortypes import CATEGORIES
from robusteval.store import DB_NAME, SUMMARY_NAME, RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def attack(model_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["attack", "matcha", "--model", f"hf:{model_dir}", "--dataset", "jsonl", "--data-file", SAMPLE,
            "--answer-type", "number", "--target-answer", "clean", "--judge", "arith+grounding",
            "--semantic-judge", "none", "--limit", "6", *search_config(out, steps=1), "--max-new-tokens", "40", "--out", str(out),
            *extra]


def units(out: Path) -> list[tuple[str, str, float]]:
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        return db.execute("SELECT stage, key, created FROM units WHERE stage != 'matcha_outcome' ORDER BY rowid"
                          ).fetchall()
    finally:
        db.close()


@pytest.fixture(scope="module")
def run(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matcha_types") / "run"
    assert main(attack(tiny_trained_dir, out, "--error-classifier", f"hf:{tiny_trained_dir}")) == 0
    return out


def test_every_success_carries_its_error_type(run: Path, tiny_trained_dir: Path) -> None:
    summary = json.loads((run / SUMMARY_NAME).read_text(encoding="utf-8"))
    with RunStore.open_existing(run) as store:
        rows = store.records("matcha_outcome")
        cached = store.records(JUDGE_STAGE)
    successes = [r for r in rows if r.get("outcome") == "success"]
    assert successes, "the tiny model's perturbed chains should give successes under arith+grounding"
    for row in rows:
        found: dict[str, Any] | None = row["error_type"]
        if row.get("outcome") != "success":
            assert found is None
            continue
        assert found is not None and set(found) == {"category", "judge", "raw", "detail"}
        assert found["category"] in CATEGORIES and found["judge"]
        # The deciding judge said why: its own finding names the type.
        members = {m["judge"]: m for m in row["reasoning"]["detail"]["members"]}
        assert members[found["judge"]]["label"] is False
    types = summary["error_types"]
    assert types["n"] == summary["counts"]["success"] == len(successes)
    assert sum(types["counts"].values()) == types["n"] and set(types["counts"]) == set(CATEGORIES)
    assert types["shares"][successes[0]["error_type"]["category"]] > 0
    assert summary["judges"]["error_classifier"] == f"errortype:hf:{tiny_trained_dir}"
    # arith+grounding always says why, so the classifier had nothing to type.
    assert not [c for c in cached if c["judge"].startswith("errortype:")]


def test_a_rerun_recomputes_nothing(run: Path, tiny_trained_dir: Path) -> None:
    before = units(run)
    summary = json.loads((run / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert main(attack(tiny_trained_dir, run, "--error-classifier", f"hf:{tiny_trained_dir}")) == 0
    assert units(run) == before
    again = json.loads((run / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert again["error_types"] == summary["error_types"]


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--error-classifier", "tiny", "--error-classifier: 'tiny' is not a model spec"),
    ("--error-classifier", "hff:model", "--error-classifier: model spec 'hff:model' not understood"),
    ("--judge", "nonsense", "unknown judge 'nonsense'"),
    ("--judge", "arith+hff:model", "judge spec 'arith+hff:model': model spec 'hff:model' not understood"),
    ("--semantic-judge", "arith", "judge 'arith' checks reasoning only"),
])
def test_a_bad_judge_or_classifier_spec_is_refused_before_the_run_directory_is_made(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str,
        message: str) -> None:
    out = tmp_path / "run"
    assert main(attack(tiny_trained_dir, out, flag, value, "--limit", "1")) == 2
    assert message in one_error_line(capsys)
    assert not out.exists()


def test_the_corrected_classifier_spec_runs_where_the_typo_was_refused(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(attack(tiny_trained_dir, out, "--error-classifier", "tiny", "--limit", "1")) == 2
    one_error_line(capsys)
    assert main(attack(tiny_trained_dir, out, "--error-classifier", f"hf:{tiny_trained_dir}", "--limit", "1")) == 0
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["judges"]["error_classifier"] == f"errortype:hf:{tiny_trained_dir}"


def test_transfer_refuses_a_bad_classifier_spec_before_its_run_directory_is_made(
        run: Path, tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "transfer"
    for flag, value in (("--error-classifier", "tiny"), ("--judge", "nonsense")):
        assert main(["transfer", "--from", str(run), "--model", f"hf:{tiny_trained_dir}", flag, value,
                     "--out", str(out)]) == 2
        assert value in one_error_line(capsys)
        assert not out.exists()
