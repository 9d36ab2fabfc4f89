"""``robusteval transfer``: replay a real MATCHA run's successes on a model behind a real ``transformers serve``.

The source run is a real ``robusteval attack matcha`` run (in-process) on the tiny trained Llama. That model
is too small for the arithmetic judge to find wrong reasoning in five questions, so when the run has no
``success`` outcome the test copies its database and relabels a few attacked records as successes through
``RunStore.put`` (preferring those whose answer was kept, which differ from a success only in the judge's
verdict). Everything the transfer command reads (questions, perturbed questions, gold answers, identity, the
exemplar prefix) stays as the attack wrote it.

The target model is the same tiny trained Llama served by ``transformers serve`` on loopback, not the shared
``tiny_served_model``: that one's word-level tokenizer cannot encode the answer-first stop string "\\nQ:" and
``transformers serve`` answers every such request with HTTP 500.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval.cli.main as cli_main
from helpers.runs import summary
from helpers.servers import serve_transformers
from robusteval.attacks.matcha.transfer import GENERATION_STAGE, OUTCOME_STAGE, SOURCE_STAGE
from robusteval.judges import JUDGE_STAGE
from robusteval.store import DB_NAME, RunStore

SAMPLE = Path(str(resources.files("robusteval.data.samples") / "math.jsonl"))
N_FORCED = 3


def copy_run(src: Path, dst: Path) -> Path:
    """A consistent copy of a run directory's database (WAL included)."""
    dst.mkdir(parents=True)
    with sqlite3.connect(src / DB_NAME) as db:
        db.execute("VACUUM INTO ?", (str(dst / DB_NAME),))
    return dst


def rewrite_outcomes(run_dir: Path, change: Any) -> list[dict[str, Any]]:
    """Apply ``change(record) -> record`` to every source outcome record, keeping their stored order."""
    with RunStore.open(run_dir) as store:  # a writer: readers (open_existing) never write
        units = list(store.iter_units(SOURCE_STAGE))
        for unit in units:
            store.put(SOURCE_STAGE, unit["key"], change(dict(unit["record"])), example_id=unit["example_id"])
        return store.records(SOURCE_STAGE)


def successes(run_dir: Path) -> list[dict[str, Any]]:
    with RunStore.open_existing(run_dir) as store:
        return [r for r in store.records(SOURCE_STAGE) if r.get("outcome") == "success"]


def stored(run_dir: Path, stage: str) -> list[dict[str, Any]]:
    with RunStore.open_existing(run_dir) as store:
        return list(store.iter_units(stage))


def read_summary(run_dir: Path) -> dict[str, Any]:
    return summary(run_dir)  # without what the invocation measured (peak memory, torch threads)


@pytest.fixture(scope="module")
def source_run(tiny_trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real token-level MATCHA run with at least one success (relabelled if needed, see module docstring)."""
    base = tmp_path_factory.mktemp("matcha_source")
    attack = base / "attack"
    rc = cli_main.main([
        "attack", "matcha", "--model", f"hf:{tiny_trained_dir}", "--dataset", "jsonl", "--data-file", str(SAMPLE),
        "--level", "token", "--target-answer", "clean", "--judge", "arith", "--semantic-judge", "none",
        "--limit", "5", "--max-new-tokens", "32", "--steps", "2", "--out", str(attack),
    ])  # fmt: skip
    assert rc == 0
    if successes(attack):
        return attack
    forced = copy_run(attack, base / "forced")
    with RunStore.open_existing(forced) as store:
        attacked = [r for r in store.records(SOURCE_STAGE) if r.get("attacked") and r.get("perturbed_question")]
    assert attacked, "the attack run attacked nothing"
    chosen = {r["id"] for r in sorted(attacked, key=lambda r: not r["answer_kept"])[:N_FORCED]}

    def force(record: dict[str, Any]) -> dict[str, Any]:
        if record["id"] in chosen:
            record.update(answer_kept=True, reasoning_wrong=True, outcome="success")
        return record

    rewrite_outcomes(forced, force)
    assert {r["id"] for r in successes(forced)} == chosen
    return forced


@pytest.fixture(scope="module")
def target_spec(tiny_trained_dir: Path) -> Iterator[str]:
    with serve_transformers(tiny_trained_dir, log_path=tiny_trained_dir.parent / "transfer-serve.log") as url:
        yield f"openai:{tiny_trained_dir}@{url}"


def transfer_args(source: Path, spec: str, out: Path, *extra: str) -> list[str]:
    return ["transfer", "--from", str(source), "--model", spec, "--temperature", "0.7", "--max-new-tokens", "16",
            "--model-args", "max_concurrency=1", "--out", str(out), *extra]  # fmt: skip


@pytest.fixture(scope="module")
def transfer_run(source_run: Path, target_spec: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("transfer") / "run"
    assert cli_main.main(transfer_args(source_run, target_spec, out)) == 0
    return out


def test_transfer_replays_each_success_twice_and_summarises(
    source_run: Path, target_spec: str, transfer_run: Path
) -> None:
    wanted = successes(source_run)
    assert wanted  # the source_run fixture guarantees successes to replay
    summary = read_summary(transfer_run)
    assert summary["source_run"] == str(source_run.resolve())
    assert summary["model"] == target_spec
    assert summary["temperature"] == 0.7 and summary["max_new_tokens"] == 16
    assert summary["judges"] == {"reasoning": "arith"}  # the source run's judge by default
    assert summary["source_level"] == "token" and summary["answer_type"] == "number"
    assert summary["n_transferred"] == summary["n_source_successes"] == len(wanted)

    generations = stored(transfer_run, GENERATION_STAGE)
    assert len(generations) == 2 * len(wanted)
    for source in wanted:
        mine = {u["record"]["kind"]: u["record"] for u in generations if u["example_id"] == source["id"]}
        assert set(mine) == {"original", "perturbed"}
        assert mine["original"]["question"] == source["clean_question"]
        assert mine["perturbed"]["question"] == source["perturbed_question"]
        for record in mine.values():
            assert record["model"] == target_spec and record["temperature"] == 0.7
            assert isinstance(record["completion"], str) and "\nQ:" not in record["completion"]

    outcomes = [u["record"] for u in stored(transfer_run, OUTCOME_STAGE)]
    assert sorted(r["id"] for r in outcomes) == sorted(s["id"] for s in wanted)
    eligible = [r for r in outcomes if r["original_correct"]]
    wins = [r for r in eligible if r["answer_kept"] and r["reasoning_wrong"] is True]
    assert summary["n_original_correct"] == len(eligible)
    assert summary["n_success"] == len(wins)
    if eligible:
        assert summary["transfer_rate"] == len(wins) / len(eligible)
        assert summary["transfer_rate_ci95"] is not None
    else:
        assert summary["transfer_rate"] is None and summary["transfer_rate_ci95"] is None
    for row in outcomes:  # the judge is asked exactly where the outcome depends on it
        judged = row["original_correct"] and row["answer_kept"]
        assert (row["reasoning"] is not None) == judged
        assert row["outcome"] == ("excluded" if not row["original_correct"] else "wrong" if not row["answer_kept"]
                                  else "success" if row["reasoning_wrong"] else "unsuccessful")  # fmt: skip


def test_rerun_computes_nothing_new(
    source_run: Path, target_spec: str, transfer_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = [(u["key"], u["created"]) for u in stored(transfer_run, GENERATION_STAGE)]
    summary = read_summary(transfer_run)
    capsys.readouterr()
    assert cli_main.main(transfer_args(source_run, target_spec, transfer_run)) == 0
    assert "transfer_rate" in capsys.readouterr().out  # the table
    assert [(u["key"], u["created"]) for u in stored(transfer_run, GENERATION_STAGE)] == before
    assert read_summary(transfer_run) == summary


def test_judged_path_with_gold_the_target_gives(
    source_run: Path, target_spec: str, transfer_run: Path, tmp_path: Path
) -> None:
    """Relabel each gold answer as the target model's own original answer: every question becomes eligible.

    The generations are reused from the first transfer (same source identity, same requests), so the test is
    deterministic: only grading, judging and the transfer rate are recomputed.
    """
    originals = {u["record"]["id"]: u["record"]["predicted"] for u in stored(transfer_run, GENERATION_STAGE)
                 if u["record"]["kind"] == "original"}  # fmt: skip
    readable = {k: v for k, v in originals.items() if v is not None}
    assert readable, "the tiny model gave no readable answer"
    relabelled = copy_run(source_run, tmp_path / "source")
    rewrite_outcomes(relabelled, lambda r: {**r, "gold": readable.get(r["id"], r["gold"])})
    out = tmp_path / "transfer"
    shutil.copytree(transfer_run, out)
    before = [u["key"] for u in stored(out, GENERATION_STAGE)]
    assert cli_main.main(transfer_args(relabelled, target_spec, out)) == 0
    assert [u["key"] for u in stored(out, GENERATION_STAGE)] == before  # no new request

    summary = read_summary(out)
    outcomes = [u["record"] for u in stored(out, OUTCOME_STAGE)]
    assert summary["n_original_correct"] == len(readable)
    kept = [r for r in outcomes if r["original_correct"] and r["answer_kept"]]
    for row in outcomes:
        assert row["original_correct"] == (row["id"] in readable)
        if row in kept:
            # arith decides, or abstains (no equation in the reasoning) and the row is counted apart.
            assert row["reasoning"]["judge"] == "arith"
            assert (row["reasoning_wrong"] is None) == (row["outcome"] == "unjudged")
        else:
            assert row["reasoning"] is None
    wins = sum(r["reasoning_wrong"] is True for r in kept)
    assert summary["n_success"] == wins
    unjudged = sum(r["reasoning_wrong"] is None for r in kept)
    # Unjudged answers stay in the denominator (issue 34): every question answered correctly originally.
    assert summary["n_unjudged"] == unjudged and summary["among_judged"]["n"] == len(readable) - unjudged
    n = summary["n_original_correct"]
    assert summary["transfer_rate"] == (wins / n if n else None) and sum(summary["counts"].values()) == n
    assert summary["counts"]["wrong"] == len(readable) - len(kept)
    # Transferred successes carry their error type, as the attack's own successes do (arith: calculation).
    for row in outcomes:
        found = row["error_type"]
        assert (found is None) == (row["outcome"] != "success")
        assert found is None or (found["category"], found["judge"]) == ("wrong calculation", "arith")
    assert summary["error_types"]["n"] == wins == summary["error_types"]["counts"]["wrong calculation"]


def test_source_without_successes_writes_an_empty_summary(
    source_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = copy_run(source_run, tmp_path / "source")
    rewrite_outcomes(source, lambda r: {**r, "outcome": "unsuccessful"} if r.get("outcome") == "success" else r)
    out = tmp_path / "transfer"
    # Nothing listens here: with no success to replay, no model is contacted.
    dead = "openai:nobody@http://127.0.0.1:9/v1"
    assert cli_main.main(transfer_args(source, dead, out)) == 0
    assert "no successful perturbations" in capsys.readouterr().out
    summary = read_summary(out)
    assert summary["n_transferred"] == 0 and summary["n_original_correct"] == 0 and summary["n_success"] == 0
    assert summary["transfer_rate"] is None and summary["source_run"] == str(source.resolve())
    assert stored(out, GENERATION_STAGE) == [] and stored(out, JUDGE_STAGE) == []


def test_not_a_matcha_run_is_a_one_line_error(
    tmp_path: Path, transfer_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    spec = "openai:nobody@http://127.0.0.1:9/v1"
    for source, message in [(empty, "not a robusteval run directory"), (tmp_path / "missing", "no such directory"),
                            (transfer_run, "not a MATCHA attack run")]:  # fmt: skip
        capsys.readouterr()
        assert cli_main.main(transfer_args(source, spec, tmp_path / "out")) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err


def test_the_summary_types_the_successes_of_the_rows_it_is_given(tmp_path: Path) -> None:
    """summary() reads the error types from its rows (as outcomes() stored them), not from state an earlier
    outcomes() call left on the runner: rows read back from a store summarise the same."""
    from robusteval.attacks.matcha.transfer import SourceRun, TransferRunner
    from robusteval.prompts.answer_first import load_exemplars

    class Named:
        name = "target"

    source = SourceRun(tmp_path, {"command": "attack matcha"}, load_exemplars("math"), "math", "number", [], 3, 3)
    with RunStore.open(tmp_path / "run") as store:
        runner = TransferRunner(Named(), store, source, reasoning_judge=lambda items: [])  # type: ignore[arg-type]
        row = {"original_correct": True, "answer_kept": True, "reasoning_wrong": True, "outcome": "success"}
        rows = [{**row, "error_type": {"category": "wrong calculation", "judge": "arith", "raw": "", "detail": {}}},
                {**row, "error_type": {"category": "irrelevant information", "judge": "grounding", "raw": "",
                                       "detail": {}}},
                {**row, "error_type": None},  # a success stored without a type counts as unclassified
                {**row, "reasoning_wrong": False, "outcome": "unsuccessful", "error_type": None}]
        types = runner.summary(rows, {"reasoning": "arith"})["error_types"]
    assert types["n"] == 3
    assert {c: n for c, n in types["counts"].items() if n} == {
        "wrong calculation": 1, "irrelevant information": 1, "unclassified": 1}
