"""``robusteval attack matcha`` end to end on the tiny trained Llama: both levels, every baseline, gsm8k,
resumption after SIGKILL, and the refusal of a model that is not white-box.

``main(argv)`` in-process where the process boundary does not matter (fast); a real subprocess for the kill.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.datafiles import write_jsonl
from helpers.runs import differences, summary
from helpers.shared import shared_file
from robusteval.cli.main import main
from robusteval.store import DB_NAME, SUMMARY_NAME, RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
PLAIN_WORD = re.compile(r" ?[A-Za-z]{2,14}")
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
    # The same single intra-op thread as this process (tests/conftest.py): identical floating-point results.
    "OMP_NUM_THREADS": "1",
}


def matcha_args(
    model: str, out: Path, *extra: str, level: str = "token", limit: int = 5, steps: int | None = 2,
    dataset: tuple[str, ...] = ("--dataset", "jsonl", "--data-file", SAMPLE, "--answer-type", "number"),
    max_new_tokens: int = 48, target: str = "clean",
) -> list[str]:  # fmt: skip
    """The issue's command; ``steps=None`` leaves --steps at its default (the paper's j = 5)."""
    return [
        "attack", "matcha", "--model", model, *dataset, "--level", level, "--target-answer", target,
        "--judge", "arith", "--semantic-judge", "none", "--limit", str(limit),
        *(["--steps", str(steps)] if steps is not None else []),
        "--max-new-tokens", str(max_new_tokens), "--out", str(out), *extra,
    ]  # fmt: skip


def summary_of(out: Path) -> dict[str, Any]:
    return summary(out)  # without what the invocation measured (peak memory, torch threads)


def records(out: Path, stage: str) -> list[dict[str, Any]]:
    store = RunStore.open_existing(out)
    try:
        return store.records(stage)
    finally:
        store.close()


def units(out: Path) -> list[tuple[str, str, str, float]]:
    """(stage, key, example_id, created) of every unit, through a plain read-only connection."""
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        return db.execute("SELECT stage, key, example_id, created FROM units ORDER BY rowid").fetchall()
    finally:
        db.close()


def count_attacks(out: Path) -> int:
    if not (out / DB_NAME).is_file():
        return 0
    try:
        db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True, timeout=1.0)
        try:
            return db.execute("SELECT COUNT(*) FROM units WHERE stage='matcha_attack'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


@pytest.fixture(scope="module")
def tokenizer(tiny_trained_dir: Path):  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_trained_dir))


def _layout(tokenizer) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(length of BOS + exemplar prefix, length of "Q:") as the runner tokenises them."""
    from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars

    prompt = AnswerFirstPrompt(default_exemplars("number"))
    prefix, head, _, _ = prompt.segments("")
    prefix_len = 1 + len(tokenizer(prefix, add_special_tokens=False)["input_ids"])
    return prefix_len, len(tokenizer(head.rstrip(), add_special_tokens=False)["input_ids"])


@pytest.fixture(scope="module")
def token_run(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matcha_cli") / "token"
    # Default steps (5): also widens the window in which the resume test's kill lands.
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, steps=None)) == 0
    return out


@pytest.fixture(scope="module")
def embedding_run(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matcha_cli") / "embedding"
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, level="embedding")) == 0
    return out


# --------------------------------------------------------------------------------------- shared checks


def check_summary(out: Path, *, n: int, level: str, variant: str, steps: int = 2) -> dict[str, Any]:
    summary = summary_of(out)
    assert summary["n"] == n
    assert summary["level"] == level and summary["variant"] == variant
    assert summary["target_answer"] == "clean"
    assert summary["judges"]["reasoning"] == "arith"
    assert summary["judges"]["semantic"].startswith("none")
    hyper = summary["hyperparameters"]
    assert hyper["level"] == level and hyper["variant"] == variant
    assert hyper["steps"] == steps and hyper["target_answer"] == "clean" and hyper["seed"] == 0
    assert hyper["insert_ratio"] == 0.2
    assert summary["acc"] == pytest.approx(summary["n_correct"] / n)
    attacked = summary["n_attacked"]
    assert 0 < attacked <= n, "nothing attacked: the rate and record checks below would check nothing"
    rates = ("ur", "sr", "wr", "unjudged_rate", "clean_cot_wrong_rate")
    assert sum(summary[k] for k in rates) == pytest.approx(1.0, abs=1e-12)
    assert all(0.0 <= summary[k] <= 1.0 for k in rates)
    counts = summary["counts"]
    # Every attacked example is in exactly one category (issue 34): a clean reasoning already judged wrong (no SR
    # credit) and a kept answer the judge abstained on (arith: no equation) are categories of their own.
    assert sum(counts.values()) == attacked
    assert (counts["clean_cot_wrong"], counts["unjudged"]) == (summary["n_clean_cot_wrong"], summary["n_unjudged"])
    assert summary["sr"] == pytest.approx(counts["success"] / attacked)
    rated = summary["among_judged"]["n"]  # the secondary view
    assert counts["unsuccessful"] + counts["success"] + counts["wrong"] == rated
    outcomes = records(out, "matcha_outcome")
    assert len(outcomes) == n and len({r["id"] for r in outcomes}) == n
    assert sum(r["attacked"] for r in outcomes) == attacked
    assert sum(r["clean_correct"] for r in outcomes) == summary["n_correct"]
    for row in outcomes:
        if row["attacked"]:
            assert row["skip_reason"] is None
            expected = "clean_cot_wrong" if row["clean_cot_wrong"] else "wrong" if not row["answer_kept"] else (
                "unjudged" if row["reasoning_wrong"] is None else "success" if row["reasoning_wrong"] else
                "unsuccessful")
            assert row["outcome"] == expected
            assert row["level"] == level and row["variant"] == variant
            assert len([s for s in row["steps"] if "loss" in s]) >= 1
        else:
            assert row["skip_reason"]
    attack_units = [u for u in units(out) if u[0] == "matcha_attack"]
    assert len(attack_units) == attacked
    assert len({u[2] for u in attack_units}) == attacked
    return summary


def check_token_records(out: Path, tokenizer) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Token-level invariants on every attack unit and every attacked outcome record."""
    clean = {r["id"]: r for r in records(out, "matcha_clean")}
    attacked = records(out, "matcha_attack")
    outcomes = [r for r in records(out, "matcha_outcome") if r["attacked"]]
    assert sorted(r["id"] for r in outcomes) == sorted(r["id"] for r in attacked)
    prefix_len, head_len = _layout(tokenizer)
    for row in attacked + outcomes:
        question_ids = clean[row["id"]]["question_ids"]
        assert question_ids == tokenizer(" " + row["clean_question"].strip(), add_special_tokens=False)["input_ids"]
        perturbed = row["perturbed_question_ids"]
        inserted, replaced = row["inserted_positions"], row["replaced_positions"]
        assert len(inserted) == max(1, round(0.2 * len(question_ids)))
        assert all(0 <= p < len(perturbed) for p in inserted + replaced)
        assert set(replaced) <= set(inserted)
        assert [t for i, t in enumerate(perturbed) if i not in set(inserted)] == question_ids
        for position in inserted:
            assert PLAIN_WORD.fullmatch(tokenizer.decode([perturbed[position]]))
        assert row["perturbed_question"] == tokenizer.decode(perturbed, skip_special_tokens=True).strip()
        # The span covers exactly the clean question: after BOS + exemplars + "Q:", as long as the question.
        assert row["question_span"] == [prefix_len + head_len, prefix_len + head_len + len(question_ids)]
        assert row["n3"] < row["n4"]
        if row["variant"] != "cot-loss-only":
            assert row["lambda"] == pytest.approx((row["n4"] - row["n3"]) / row["n4"])
    return attacked


# --------------------------------------------------------------------------------------- both levels


def test_token_level_run(token_run: Path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    summary = check_summary(token_run, n=5, level="token", variant="full", steps=5)
    assert summary["n_attacked"] > 0, "the trained tiny model should give answers + CoTs to attack"
    assert summary["hyperparameters"]["max_new_tokens"] == 48
    assert summary["hyperparameters"]["topk_ratio"] > 0
    attacked = check_token_records(token_run, tokenizer)
    assert len(attacked) == summary["n_attacked"]
    assert any(row["replaced_positions"] for row in attacked), "no replacement accepted with semantic judge none"
    for row in attacked:
        assert {"optimise", "generate"} <= set(row["seconds"])


def test_token_rerun_computes_nothing(token_run: Path, tiny_trained_dir: Path) -> None:
    before = [u for u in units(token_run) if u[0] != "matcha_outcome"]
    first = summary_of(token_run)
    assert main(matcha_args(f"hf:{tiny_trained_dir}", token_run, steps=None)) == 0
    assert [u for u in units(token_run) if u[0] != "matcha_outcome"] == before
    assert summary_of(token_run) == first


def test_embedding_level_run(embedding_run: Path) -> None:
    summary = check_summary(embedding_run, n=5, level="embedding", variant="full")
    assert summary["n_attacked"] > 0
    attacked = records(embedding_run, "matcha_attack")
    outcomes = [r for r in records(embedding_run, "matcha_outcome") if r["attacked"]]
    assert len(outcomes) == len(attacked)
    assert all(0 < r["max_abs_delta"] <= r["epsilon"] + 1e-6 for r in outcomes)
    assert summary["max_abs_delta"] == pytest.approx(max(r["max_abs_delta"] for r in attacked))
    assert summary["epsilon_mean"] == pytest.approx(sum(r["epsilon"] for r in attacked) / len(attacked))
    for row in attacked:
        assert row["perturbed_question"] is None
        assert row["eps_fraction"] == summary["hyperparameters"]["eps_fraction"]
        assert 0 < row["max_abs_delta"] <= row["epsilon"] + 1e-6
        assert len(row["steps"]) == 3  # two PGD steps and the final loss


# --------------------------------------------------------------------------------------- baselines


def rated_questions(token_run: Path) -> list[dict[str, Any]]:
    """Sample questions whose clean reasoning the arithmetic checker accepts (so their outcome is rated)."""
    rated = {r["id"] for r in records(token_run, "matcha_outcome") if r["attacked"] and not r["clean_cot_wrong"]}
    questions = [json.loads(line) for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines()]
    chosen = [q for q in questions if q["id"] in rated]
    assert chosen, "token_run rated nothing: the tests below would check nothing"
    return chosen


@pytest.mark.parametrize("variant", ["gcg-suffix", "random-insert", "random-locs", "cot-loss-only"])
def test_variants_run(variant: str, token_run: Path, tiny_trained_dir: Path, tmp_path: Path,
                      tokenizer) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / variant
    data = write_jsonl(tmp_path / "rated.jsonl", rated_questions(token_run)[:2])
    dataset = ("--dataset", "jsonl", "--data-file", str(data), "--answer-type", "number")
    n = min(2, len(rated_questions(token_run)))
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, "--variant", variant, limit=2, dataset=dataset)) == 0
    summary = check_summary(out, n=n, level="token", variant=variant)
    assert summary["n_attacked"] > 0
    attacked = check_token_records(out, tokenizer)
    for row in attacked:
        n_question = len(row["perturbed_question_ids"]) - len(row["inserted_positions"])
        if variant == "gcg-suffix":
            assert row["inserted_positions"] == list(range(n_question, len(row["perturbed_question_ids"])))
        if variant == "random-insert":
            assert row["replaced_positions"] == [] and len(row["steps"]) == 1
        if variant == "cot-loss-only":
            assert row["lambda"] == 0.0
        else:
            assert row["lambda"] > 0


def test_embedding_level_refuses_token_baselines(tiny_trained_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(matcha_args(f"hf:{tiny_trained_dir}", tmp_path / "x", "--variant", "gcg-suffix",
                            level="embedding", limit=1))
    assert code == 2
    assert "token-level baseline" in capsys.readouterr().err


def test_gold_target_attacks_only_correct_answers(token_run: Path, tiny_trained_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Golds chosen so the model is right on one question and wrong on the other: the first is attacked (against
    its gold), the second skipped. The model's clean answers come from ``token_run`` (same prompt, same
    max_new_tokens, greedy: the gold run's clean pass repeats them)."""
    attacked_ids = {r["id"] for r in records(token_run, "matcha_attack")}
    clean = {r["id"]: r for r in records(token_run, "matcha_clean")}
    questions = [json.loads(line) for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines()]
    rated = {q["id"] for q in rated_questions(token_run)}
    right = next(q for q in questions if q["id"] in attacked_ids and q["id"] in rated)  # an answer + a sound CoT
    wrong = next(q for q in questions if q["id"] != right["id"] and clean[q["id"]]["predicted"] is not None)
    right_gold = clean[right["id"]]["predicted"]
    wrong_gold = str(int(float(clean[wrong["id"]]["predicted"])) + 1)  # anything but the model's answer
    data = write_jsonl(tmp_path / "gold.jsonl", [{**right, "answer": right_gold}, {**wrong, "answer": wrong_gold}])
    dataset = ("--dataset", "jsonl", "--data-file", str(data), "--answer-type", "number")

    out = tmp_path / "gold"
    capsys.readouterr()
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, limit=2, target="gold", dataset=dataset)) == 0
    printed = capsys.readouterr().out
    summary = summary_of(out)
    # Why the other question was not attacked: in the summary and under the terminal table.
    assert summary["skip_reasons"] == {"clean answer wrong": 1}
    assert "not attacked: 1 (clean answer wrong 1)" in printed and "n_attacked" in printed
    assert summary["target_answer"] == "gold" and summary["n"] == 2
    assert summary["n_correct"] == 1 and summary["n_attacked"] == 1
    outcomes = {r["id"]: r for r in records(out, "matcha_outcome")}
    assert outcomes[right["id"]]["clean_correct"] and outcomes[right["id"]]["attacked"]
    assert not outcomes[wrong["id"]]["clean_correct"] and not outcomes[wrong["id"]]["attacked"]
    assert outcomes[wrong["id"]]["skip_reason"] == "clean answer wrong"
    (attack,) = records(out, "matcha_attack")
    assert attack["id"] == right["id"] and attack["target"] == right_gold == attack["gold"]
    assert summary["ur"] + summary["sr"] + summary["wr"] == pytest.approx(1.0)


# --------------------------------------------------------------------------------------- gsm8k


def test_gsm8k_dataset(tiny_trained_dir: Path, tmp_path: Path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "gsm8k"
    dataset = ("--dataset", "gsm8k", "--data-file", str(shared_file("gsm8k/test.jsonl")))
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, limit=3, dataset=dataset, max_new_tokens=32)) == 0
    summary = check_summary(out, n=3, level="token", variant="full")
    assert summary["dataset"] == "gsm8k"
    assert summary["n_attacked"] > 0
    # Paper defaults for GSM8K: k = 0.25, eps = 0.005.
    assert summary["hyperparameters"]["topk_ratio"] == 0.25
    assert summary["hyperparameters"]["eps_fraction"] == 0.005
    check_token_records(out, tokenizer)


# --------------------------------------------------------------------------------------- resume


@pytest.fixture
def killed_run(tiny_trained_dir: Path, tmp_path: Path) -> Iterator[tuple[Path, list[tuple[str, str, str, float]]]]:
    """The token-level command in a subprocess, attacking two examples at a time, SIGKILLed once at least one
    attack unit is stored (the default batch would attack all five at once)."""
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "robusteval.cli.main",
               *matcha_args(f"hf:{tiny_trained_dir}", out, "--batch-size", "2", steps=None)]
    log = tmp_path / "killed.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 120
            while count_attacks(out) < 1:
                assert proc.poll() is None, f"the run ended before the kill: {log.read_text()[-2000:]}"
                assert time.monotonic() < deadline, "no attack unit stored within 120 s"
                time.sleep(0.02)
            assert proc.poll() is None, "the run finished before the kill"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == -signal.SIGKILL
    yield out, units(out)


def test_sigkill_resume_matches_an_uninterrupted_run(
    killed_run: tuple[Path, list[tuple[str, str, str, float]]], token_run: Path, tiny_trained_dir: Path
) -> None:
    out, before = killed_run
    attacks_before = [u for u in before if u[0] == "matcha_attack"]
    assert 1 <= len(attacks_before) < summary_of(token_run)["n_attacked"]
    assert not (out / SUMMARY_NAME).exists()

    # Resumed at the default batch size: the batch size is not part of the run.
    assert main(matcha_args(f"hf:{tiny_trained_dir}", out, steps=None)) == 0

    after = units(out)
    # Nothing stored before the kill was recomputed or rewritten.
    by_key = {(stage, key): (example_id, created) for stage, key, example_id, created in after}
    for stage, key, example_id, created in before:
        assert by_key[(stage, key)] == (example_id, created), (stage, example_id)
    summary = summary_of(out)
    attack_units = [u for u in after if u[0] == "matcha_attack"]
    assert len(attack_units) == summary["n_attacked"]
    assert len({u[2] for u in attack_units}) == len(attack_units)
    # Same seed, same inputs: the same outcome as the run that was never interrupted.
    assert summary == summary_of(token_run)
    # Attacked two at a time, then eight: the same records (logged losses to float rounding, see differences).
    resumed = sorted(records(out, "matcha_attack"), key=lambda r: r["id"])
    reference = sorted(records(token_run, "matcha_attack"), key=lambda r: r["id"])
    assert differences(resumed, reference) == []


# --------------------------------------------------------------------------------------- black-box model


def test_api_model_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(matcha_args("openai:x@http://127.0.0.1:9/v1", tmp_path / "api", limit=1, steps=None))
    assert code == 2
    err = capsys.readouterr().err
    assert "whitebox" in err.replace("white-box", "whitebox").lower()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
