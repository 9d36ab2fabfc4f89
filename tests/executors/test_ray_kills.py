"""A Ray run survives its processes dying: a worker SIGKILLed mid-run is replaced and its batches computed
again (none lost, none stored twice), and a driver SIGKILLed mid-run resumes from its store, ending with the
units an uninterrupted in-process run stores; its local Ray instance does not outlive it (the reaper)."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.processes import descendants, kill_all, wait_gone
from helpers.runs import ENV, cli, units
from helpers.runs import stored_units as stored
from helpers.searchconfig import search_config
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.executors import use_executor
from robusteval.models.generation import GenerationOptions
from robusteval.store import DB_NAME

pytestmark = needs_modules("ray")

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def attack_count(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True, timeout=1.0)
        try:
            return int(db.execute("SELECT COUNT(*) FROM units WHERE stage='matcha_attack'").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:  # not created yet
        return 0


@pytest.fixture(scope="module")
def matcha_config() -> rv.MatchaRunConfig:
    # Ten examples at five steps: long enough on two workers for a kill to land mid-run.
    return rv.MatchaRunConfig(data=rv.DataSpec("jsonl", SAMPLE, limit=10, answer_type="number"), level="token",
                              target_answer="clean", steps=5, generation=GenerationOptions(max_new_tokens=40))


@pytest.fixture(scope="module")
def reference(matcha_config: rv.MatchaRunConfig, tiny_trained_dir: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "run"
    rv.attack_matcha(matcha_config, rv.load_model(f"hf:{tiny_trained_dir}"), out, batch_size=4)
    return out


@pytest.fixture
def pool() -> Iterator[Any]:
    from robusteval.executors.ray import RayExecutor

    executor = RayExecutor(workers=2)
    try:
        yield executor
    finally:
        executor.close()


def count_commits(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[tuple[str, str]], list[tuple[int, int, int]]]:
    """The driver runs here: count its store writes per (stage, key), and every batch result the executor hands
    it as (map_batches call, batch index, batches in that call)."""
    from robusteval.executors.ray import RayExecutor
    from robusteval.store import RunStore

    puts: Counter[tuple[str, str]] = Counter()
    results: list[tuple[int, int, int]] = []
    calls = itertools.count()
    put, map_batches = RunStore.put, RayExecutor.map_batches

    def counted_put(self: Any, stage: str, key: str, *args: Any, **kwargs: Any) -> None:
        puts[(stage, key)] += 1
        put(self, stage, key, *args, **kwargs)

    def counted_map_batches(self: Any, stage: str, batches: Any, *args: Any) -> Iterator[Any]:
        call = next(calls)
        for result in map_batches(self, stage, batches, *args):
            results.append((call, result.index, len(batches)))
            yield result

    monkeypatch.setattr(RunStore, "put", counted_put)
    monkeypatch.setattr(RayExecutor, "map_batches", counted_map_batches)
    return puts, results


def test_a_killed_worker_is_replaced_and_nothing_is_lost_or_stored_twice(
        pool: Any, matcha_config: rv.MatchaRunConfig, tiny_trained_dir: Path, reference: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO, logger="robusteval")
    out = tmp_path / "run"
    puts, results = count_commits(monkeypatch)
    first = pool.worker_pids()
    killed: list[int] = []

    def kill_a_worker_once_attacks_are_stored() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and attack_count(out) < 2:
            time.sleep(0.02)
        os.kill(first[0], signal.SIGKILL)
        killed.append(first[0])

    killer = threading.Thread(target=kill_a_worker_once_attacks_are_stored, daemon=True)
    killer.start()
    with use_executor(pool):
        summary = rv.attack_matcha(matcha_config, rv.load_model(f"hf:{tiny_trained_dir}"), out, batch_size=4)
    killer.join(timeout=10)
    assert killed, "the run ended before a worker could be killed"
    assert attack_count(out) == attack_count(reference) == summary["n_attacked"] > 2
    now = pool.worker_pids()
    assert first[0] not in now and first[1] in now and len(now) == 2, "the dead worker was not replaced"
    assert any("a Ray worker died" in r.getMessage() for r in caplog.records), "no batch of the dead worker was redone"
    assert stored(out) == stored(reference)  # every unit, computed once: the keys are the primary key
    assert [row[:2] for row in units(out)] == list(dict.fromkeys(row[:2] for row in units(out)))
    # The store cannot hold a unit twice (INSERT OR REPLACE on the primary key), so count the commits themselves:
    # every batch came back exactly once, and every unit was written exactly once.
    assert results and sorted(results) == sorted({(call, index, n) for call, _, n in results for index in range(n)})
    assert set(puts) == {row[:2] for row in units(out)}
    assert [key for key, n in puts.items() if n != 1] == []


def newest_ready_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the driver's ray.wait hand back the most recently submitted of the refs ready by then: Ray reports a
    dead actor's batches in no particular order, and this is the order that blames a batch queued behind the one
    that killed the worker, if anything does."""
    import ray

    wait = ray.wait

    def newest_first(refs: list[Any], *, num_returns: int = 1, **options: Any) -> tuple[list[Any], list[Any]]:
        wait(refs, num_returns=1, **options)
        ready, _ = wait(refs, num_returns=len(refs), timeout=1.0)  # whatever the same event settled
        return [ready[-1]], [ref for ref in refs if ref is not ready[-1]]

    monkeypatch.setattr(ray, "wait", newest_first)


@pytest.mark.parametrize("allowed", [1, 3])
def test_a_batch_that_kills_its_workers_is_the_one_named_not_the_batch_behind_it(
        pool: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        allowed: int) -> None:
    from robusteval.executors import ray as ray_executor
    from robusteval.executors.rayfaults import RayDied
    from robusteval.runner import run_units
    from robusteval.store import RunStore

    caplog.set_level(logging.INFO, logger="robusteval")
    monkeypatch.setattr(ray_executor, "MAX_DEATHS_PER_BATCH", allowed)
    newest_ready_first(monkeypatch)

    def compute(batch: list[str]) -> list[dict[str, Any]]:
        if "killer" in batch:
            # Only ever on a worker (the driver never computes under Ray), after computing a while, as a batch that
            # runs out of memory does: dying at once could lose the reply of the batch the worker had just finished,
            # which Ray then reports as unfinished, and the driver cannot tell it from one that never ran.
            time.sleep(0.5)
            os._exit(1)
        return [{"item": item} for item in batch]

    # Batch size 1, two batches per worker: "killer" and "behind" go to the first worker, "behind" queued after it.
    items = ["killer", "behind", "a", "b", "c", "d"]
    with RunStore.open(tmp_path / "run") as store, use_executor(pool):
        with pytest.raises(RayDied, match=rf"^stage: batch 0 killed {allowed} workers; giving up") as died:
            run_units(store, "stage", items, key_of=str, compute=compute)
        assert str(died.value).endswith("stored results are kept: make the same call again to resume")
        assert died.value.exit_code == 2  # a UserError: one line on the command line, never a traceback
        deaths = [r.getMessage() for r in caplog.records if "a Ray worker died" in r.getMessage()]
        assert len(deaths) == allowed - 1 and all("died computing batch 0 " in line for line in deaths)
        if allowed > 1:  # the run went on until batch 0 had killed 3 workers: everything else was computed
            assert store.keys("stage") == set(items) - {"killer"}


def _args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["attack", "matcha", "--model", f"hf:{model}", "--dataset", "jsonl", "--data-file", SAMPLE,
            "--answer-type", "number", "--level", "token", "--target-answer", "clean", "--judge", "arith",
            "--semantic-judge", "none", "--limit", "10", *search_config(out, steps=5), "--max-new-tokens", "40",
            "--batch-size", "4", "--out", str(out), *extra]


def test_a_killed_driver_resumes_on_ray_with_the_units_of_an_uninterrupted_run(
        tiny_trained_dir: Path, reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    ray_flags = ("--executor", "ray", "--workers", "2")
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", *_args(tiny_trained_dir, out, *ray_flags)],
                              stdout=log, stderr=subprocess.STDOUT, env=ENV)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None and attack_count(out) < 2:
            time.sleep(0.02)
        assert driver.poll() is None, "the run ended before the driver could be killed"
        started = descendants(driver.pid)  # its local Ray cluster: cleaned up below
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        # A SIGKILLed driver cannot shut its instance down; Ray's agents would linger ~60 s (the reaper kills them).
        assert {"raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= set(started.values())
        assert wait_gone(started, within=10) == {}, "the killed driver's Ray processes outlived it"
        before = {row[:2]: row[2] for row in units(out)}
        assert 2 <= sum(1 for stage, _ in before if stage == "matcha_attack") < 10
        assert not (out / "summary.json").exists()

        resumed = cli(*_args(tiny_trained_dir, out, *ray_flags), timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "already stored" in resumed.stderr
        after = {row[:2]: row[2] for row in units(out)}
        assert {key: after[key] for key in before} == before, "a unit stored before the kill was computed again"
        assert stored(out) == stored(reference)
        assert rv.load_run(out).info["executor"]["name"] == "ray"
    finally:
        log.close()
        if driver.poll() is None:
            driver.kill()
        kill_all(started)  # whatever a failing run left behind


def test_ray_flags_are_checked_before_anything_runs(tiny_trained_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(tiny_trained_dir, tmp_path / "run", "--executor", "ray", "--workers", "0")) == 2
    assert capsys.readouterr().err.strip() == "robusteval: error: workers 0: give at least 1"
    assert main(_args(tiny_trained_dir, tmp_path / "run", "--workers", "2")) == 2
    assert capsys.readouterr().err.strip() == "robusteval: error: --workers is for --executor ray"
    assert not (tmp_path / "run").exists()
