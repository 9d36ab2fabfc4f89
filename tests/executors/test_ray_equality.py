"""Every method on a real local Ray cluster of two CPU workers stores exactly what the in-process run stores.

One pool of two workers serves the whole module (Ray starts in seconds, the tiny models load once per worker).
Each test runs a pipeline twice through the library, in process and under ``use_executor(pool)``, and
compares every stored unit (stage, key, example id, record; timings left out) and the summary. Under Ray the
driver holds stand-ins (:class:`~robusteval.executors.transport.WorkerModel`): the tests also check that it
never loaded a model itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.datafiles import write_ocnli
from helpers.runs import stored_units as stored
from helpers.runs import units, untimed
from helpers.shared import needs_modules
from robusteval.evals.prompt_options import PromptOptions
from robusteval.executors import use_executor
from robusteval.judging import JudgeOptions
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.store import RunStore

pytestmark = needs_modules("ray")

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    from robusteval.executors.ray import RayExecutor

    executor = RayExecutor(workers=2)
    try:
        assert len(executor.workers) == 2
        yield executor
    finally:
        executor.close()


def summary_of(out: Path) -> dict[str, Any]:
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    summary.pop("environment", None)
    return untimed(summary)  # type: ignore[return-value]


def assert_same_runs(local: Path, remote: Path, *, stages: set[str]) -> None:
    here, there = stored(local), stored(remote)
    assert {stage for stage, _ in here} >= stages, "the run stored too little for the comparison to mean much"
    assert set(here) == set(there)
    assert [k for k in here if here[k] != there[k]] == []
    assert summary_of(local) == summary_of(remote)
    info = rv.load_run(remote).info
    assert info["executor"]["name"] == "ray" and info["executor"]["workers"] == 2
    assert rv.load_run(local).info["executor"] == {"name": "inprocess"}


def on_both(pool: Any, tmp_path: Path, run: Callable[[Callable[..., Any], Path], Any]) -> tuple[Path, Path]:
    """``run(load, out)`` in process and on the pool; ``load`` is ``load_backend``. Returns both run dirs."""
    loaded: list[Any] = []

    def load(spec: str, **options: Any) -> Any:
        loaded.append(load_backend(spec, **options))
        return loaded[-1]

    run(load, tmp_path / "local")
    loaded.clear()
    with use_executor(pool):
        run(load, tmp_path / "ray")
    assert loaded and all(type(m).__name__ == "WorkerModel" and m._local is None for m in loaded), \
        "the driver loaded a model that only the workers needed"
    return tmp_path / "local", tmp_path / "ray"


def _matcha(model: Path, level: str, **overrides: Any) -> Callable[[Callable[..., Any], Path], Any]:
    config = rv.MatchaRunConfig(data=rv.DataSpec("jsonl", SAMPLE, limit=6, answer_type="number"), level=level,
                                target_answer="clean", steps=2,
                                generation=GenerationOptions(max_new_tokens=40), **overrides)

    def run(load: Callable[..., Any], out: Path) -> Any:
        return rv.attack_matcha(config, load(f"hf:{model}"), out, load_judge=load, batch_size=4)

    return run


@pytest.mark.parametrize("level", ["token", "embedding"])
def test_matcha_stores_the_same_units_on_two_workers(pool: Any, tiny_trained_dir: Path, tmp_path: Path,
                                                     level: str) -> None:
    run = _matcha(tiny_trained_dir, level)
    local, remote = on_both(pool, tmp_path, run)
    assert_same_runs(local, remote, stages={"matcha_clean", "matcha_attack", "matcha_outcome"})
    assert rv.load_run(remote).summary["n_attacked"] > 0
    # The executor is not part of the run: the Ray run resumes in process, with nothing left to compute.
    before = units(remote)  # (stage, key, created)
    run(load_backend, remote)
    assert units(remote) == before and rv.load_run(remote).info["executor"] == {"name": "inprocess"}


def test_matcha_with_model_judges_commits_the_workers_verdicts(pool: Any, tiny_trained_dir: Path,
                                                               tmp_path: Path) -> None:
    """Semantic verdicts asked inside attacks on the workers and the reasoning verdicts of the final pass come
    back to the driver, which stores them exactly as the in-process run does."""
    judge = f"hf:{tiny_trained_dir}"
    local, remote = on_both(pool, tmp_path, _matcha(tiny_trained_dir, "token",
                                                    judging=JudgeOptions(judge=f"arith+{judge}", semantic_judge=judge)))
    assert_same_runs(local, remote, stages={"matcha_clean", "matcha_attack", "judge"})
    tasks = {record["task"] for stage, (_, record) in stored(remote).items() if stage[0] == "judge"}
    assert tasks == {"reasoning", "semantic"}


def test_eval_and_transfer_store_the_same_units(pool: Any, tiny_trained_dir: Path, tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", SAMPLE, limit=8, answer_type="number")

    def evaluate(load: Callable[..., Any], out: Path) -> Any:
        return rv.evaluate(rv.EvalConfig(data=data, generation=GenerationOptions(max_new_tokens=24)),
                           load(f"hf:{tiny_trained_dir}"), out,
                           batch_size=3)

    assert_same_runs(*on_both(pool, tmp_path / "eval", evaluate), stages={"answer_first"})

    # A source run whose attacked examples are relabelled successes (the tiny model rarely makes one).
    source = tmp_path / "source"
    _matcha(tiny_trained_dir, "token")(load_backend, source)
    with RunStore.open(source) as store:
        for unit in store.iter_units("matcha_outcome"):
            if unit["record"].get("perturbed_question"):
                store.put("matcha_outcome", unit["key"], {**unit["record"], "outcome": "success"})

    def transfer(load: Callable[..., Any], out: Path) -> Any:
        config = rv.TransferConfig(source=str(source), judging=JudgeOptions(judge=f"hf:{tiny_trained_dir}"),
                                   seed=3)
        return rv.transfer(config, load(f"hf:{tiny_trained_dir}", dtype="float32"), out, load_judge=load)

    local, remote = on_both(pool, tmp_path / "transfer", transfer)
    assert_same_runs(local, remote, stages={"transfer_generation"})


@needs_modules("pypinyin")
def test_robustness_and_wordimportance_store_the_same_units(pool: Any, tiny_nli_dir: Path, tmp_path: Path) -> None:
    from robusteval.models.tiny import tiny_nli_pairs
    from robusteval.perturbations.spec import CandidateSpec, PerturbationSpec

    data = rv.DataSpec("ocnli", str(write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(8, seed=5))))
    template = str(tiny_nli_dir / "template.json")

    def robustness(load: Callable[..., Any], out: Path) -> Any:
        config = rv.RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets="C-homophone,C-shuffle",
                                     prompt=PromptOptions(template=template), bootstrap=50)
        return rv.robustness(config, load(f"hf:{tiny_nli_dir}"), out, batch_size=4)

    assert_same_runs(*on_both(pool, tmp_path / "rb", robustness), stages={"classify", "perturbed_example"})

    def wordimportance(load: Callable[..., Any], out: Path) -> Any:
        config = rv.WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method="C-homophone",
                                            rates="0.1,0.3", budget=30,
                                            prompt=PromptOptions(template=template), seed=3)
        return rv.attack_wordimportance(config, load(f"hf:{tiny_nli_dir}"), out)

    local, remote = on_both(pool, tmp_path / "wi", wordimportance)
    # The classifier's answers asked inside each attack are cache units the workers send back.
    assert_same_runs(local, remote, stages={"wordimportance", "classify"})


@needs_modules("pypinyin")
@pytest.mark.parametrize("mode", ["echo", "plain"])
def test_an_api_model_is_resolved_by_the_workers_and_never_loaded_by_the_driver(
        pool: Any, tiny_nli_dir: Path, tmp_path: Path, mode: str) -> None:
    """openai: the workers probe the server when they load the model; the driver's capability checks (the
    classifier's soft-label decision, require, scoring_note) read what they found and never load it here."""
    from helpers.scoring_server import TinyLM, scoring_server
    from robusteval.errors import UserError
    from robusteval.models import LOGPROBS, require
    from robusteval.models.base import can_score, scoring_note
    from robusteval.models.tiny import tiny_nli_pairs
    from robusteval.perturbations.spec import PerturbationSpec

    data = rv.DataSpec("ocnli", str(write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(6, seed=5))))
    template = str(tiny_nli_dir / "template.json")
    with scoring_server(TinyLM(tiny_nli_dir), mode) as server, use_executor(pool):
        model = load_backend(server.spec("tiny-nli"))
        assert type(model).__name__ == "WorkerModel"
        assert can_score(model) is (mode == "echo")
        if mode == "echo":
            require(model, LOGPROBS, "soft labels")
        else:
            with pytest.raises(UserError, match="soft labels"):
                require(model, LOGPROBS, "soft labels")
            assert "(server: echo: " in scoring_note(model)
        probes = len(server.requests)
        config = rv.RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets="C-homophone",
                                     prompt=PromptOptions(template=template), bootstrap=20,
                                     label_mode="soft" if mode == "echo" else "hard")
        rv.robustness(config, model, tmp_path / "run", batch_size=3)
        assert model._local is None, "the driver loaded the API model"
        scoring = [r for r in server.requests[probes:] if r["body"].get("echo") or "prompt_logprobs" in r["body"]]
        if mode == "echo":  # soft labels were scored, on the workers
            assert scoring and all("label_logprobs" in r for r in records_of(tmp_path / "run", "classify"))
        else:
            assert scoring == [], "a probe was repeated after the workers had loaded the model"


def records_of(out: Path, stage: str) -> list[dict[str, Any]]:
    with RunStore.open_existing(out) as store:
        return store.records(stage)


def test_variants_eval_stores_the_same_units(pool: Any, tiny_llama_dir: Path, tmp_path: Path) -> None:
    import robusteval.variants as rvv

    rows = [{"id": f"p{i}-v0", "question": f"What is {i} + {i + 1}?", "answer": 2 * i + 1} for i in range(5)]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = rvv.VariantsEvalConfig(str(instances), samples=2,
                                    generation=GenerationOptions(temperature=0.8, max_new_tokens=8), seed=5)

    def evaluate(load: Callable[..., Any], out: Path) -> Any:
        return rvv.evaluate_variants(config, load(f"hf:{tiny_llama_dir}"), out, batch_size=3)

    assert_same_runs(*on_both(pool, tmp_path, evaluate), stages={"variants_generation"})


def test_sweep_points_run_on_the_same_pool(pool: Any, tiny_trained_dir: Path, tmp_path: Path) -> None:
    from robusteval.studies.sweep import sweep

    config = rv.MatchaRunConfig(data=rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number"),
                                target_answer="clean", generation=GenerationOptions(max_new_tokens=32))

    def run(load: Callable[..., Any], out: Path) -> Any:
        return sweep("matcha", config, out, grid={"steps": [1, 2]}, seeds=[0, 1], models=[f"hf:{tiny_trained_dir}"],
                     load_model=load)

    local, remote = on_both(pool, tmp_path, run)
    local_runs = sorted(p.parent.relative_to(local) for p in local.rglob("results.sqlite"))
    assert len(local_runs) == 4
    assert local_runs == sorted(p.parent.relative_to(remote) for p in remote.rglob("results.sqlite"))
    for run_dir in local_runs:
        assert_same_runs(local / run_dir, remote / run_dir, stages={"matcha_clean", "matcha_attack"})
    shutil.rmtree(tmp_path)


def test_a_users_error_on_a_worker_is_raised_by_the_driver_as_it_is(pool: Any, tmp_path: Path) -> None:
    from robusteval.errors import UserError
    from robusteval.runner import run_units

    def compute(batch: list[str]) -> list[dict[str, Any]]:
        if "bad" in batch:
            raise UserError(f"item {batch[0]}: cannot be computed")
        return [{"item": item} for item in batch]

    with RunStore.open(tmp_path / "run") as store, use_executor(pool):
        with pytest.raises(UserError, match=r"^item bad: cannot be computed$"):
            run_units(store, "stage", ["a", "b", "bad", "c"], key_of=str, compute=compute)
        assert "bad" not in store.keys("stage")
        # The pool is still usable, and a re-run computes only what is missing.
        assert run_units(store, "stage", ["a", "c"], key_of=str, compute=compute) == [{"item": "a"}, {"item": "c"}]


def test_a_model_the_driver_lets_go_of_is_released_by_the_workers(pool: Any, tiny_llama_dir: Path) -> None:
    import gc

    def holding() -> list[bool]:
        return [any(str(tiny_llama_dir) in key and "float32" in key for key in keys) for keys in pool.loaded_models()]

    with use_executor(pool):
        model = load_backend(f"hf:{tiny_llama_dir}", dtype="float32")
        assert load_backend(f"hf:{tiny_llama_dir}", dtype="float32") is model  # loaded once
        assert holding() == [True, True]
        del model
        gc.collect()
        assert holding() == [False, False]
