"""What travels to a worker and what the driver holds, without a Ray cluster: a compute pickled for a worker
rebuilds its model from the load recipe and its store as a scratch store (serving the run's cached verdicts,
collecting new ones), a hand-built backend is refused, a worker whose model resolves differently refuses to
compute, and the driver's stand-in answers what keys and checks need without loading the model."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.shared import needs_modules
from robusteval.errors import UserError
from robusteval.executors import transport
from robusteval.executors.transport import WorkerModel, describe, dumps_compute, shared_model
from robusteval.models import GenerationRequest, load_backend
from robusteval.models.hf import HFBackend
from robusteval.store import RunStore

pytestmark = needs_modules("ray")  # the worker's pickler is Ray's cloudpickle


@pytest.fixture(autouse=True)
def _fresh_worker_state() -> Iterator[None]:
    """This process plays the worker: every test starts with no scratch store and no loaded model, whatever ran
    before it, and leaves none behind."""
    def reset() -> None:
        transport._scratch.clear()
        transport._models.clear()

    reset()
    yield
    reset()


def test_scratch_store_serves_copies_and_collects_only_new_units() -> None:
    store = transport.scratch_store("run-a", [("judge", "k1", {"verdict": {"label": True}})])
    record = store.get("judge", "k1")
    assert record == {"verdict": {"label": True}}
    record["verdict"]["label"] = False  # a caller's edit does not reach the store
    assert store.get("judge", "k1") == {"verdict": {"label": True}}
    store.put("judge", "k1", {"verdict": {"label": True}})  # what it already holds: nothing to send
    store.put("classify", "k2", {"label": ("a", "b")}, example_id="e1")
    assert store.keys("classify") == {"k2"} and store.get("classify", "k2") == {"label": ["a", "b"]}  # as JSON
    assert transport.drain_side_units() == [{"token": "run-a", "stage": "classify", "key": "k2",
                                             "record": {"label": ["a", "b"]}, "example_id": "e1", "seconds": None}]
    assert transport.drain_side_units() == []
    assert transport.scratch_store("run-a", []) is store  # one per run and process


def test_a_compute_travels_with_its_model_as_a_recipe_and_its_store_as_a_scratch_store(
        tiny_llama_dir: Path, tmp_path: Path) -> None:
    backend = load_backend(f"hf:{tiny_llama_dir}")
    request = GenerationRequest("Q: What is 2 + 3?\nA:", max_new_tokens=6)
    with RunStore.open(tmp_path / "run") as store:
        store.put("judge", "cached", {"verdict": "stored before"})
        store.put("matcha_clean", "other", {"not": "a cache stage"})

        def compute(batch: list[str]) -> list[dict[str, Any]]:
            store.put("judge", batch[0], {"verdict": "new"})
            return [{"text": backend.generate([request])[0].text, "cached": store.get("judge", "cached")}]

        payload = dumps_compute(compute, "stage")
        assert len(payload) < 200_000, "the model's weights travelled with the compute"
        expected = backend.generate([request])[0].text
        shipped = pickle.loads(payload)
        assert shipped(["k-new"]) == [{"text": expected, "cached": {"verdict": "stored before"}}]
        assert [next(iter(transport._models.values())).identity] == [backend.identity]  # loaded from the recipe
        units = transport.drain_side_units()
        assert [(u["stage"], u["key"], u["record"]) for u in units] == [("judge", "k-new", {"verdict": "new"})]
        assert units[0]["token"] == transport.store_token(store)
        assert store.get("judge", "k-new") is None  # the driver's store was not touched


def test_a_backend_not_loaded_from_a_spec_cannot_travel(tiny_backend: Any) -> None:
    hand_built = HFBackend(tiny_backend.model, tiny_backend.tokenizer, "hand-built")
    with pytest.raises(UserError, match="'hand-built' was not loaded from a model spec"):
        dumps_compute(lambda batch: [hand_built.name for _ in batch], "stage")


def test_a_worker_whose_model_resolves_differently_refuses_to_compute(tiny_backend: Any) -> None:
    recipe = tiny_backend.load_recipe
    other = dataclasses.replace(recipe, identity={**recipe.identity, "device": "cuda", "dtype": "bfloat16"})
    with pytest.raises(UserError, match=r"resolves the model differently from the run \(device: run 'cuda', "
                                        r"worker 'cpu'; dtype: run 'bfloat16', worker 'float32'\)"):
        shared_model(other)


def test_the_drivers_stand_in_loads_the_model_only_when_it_is_called(tiny_backend: Any) -> None:
    stand_in = WorkerModel(tiny_backend.load_recipe, describe(tiny_backend))
    assert stand_in.name == tiny_backend.name and stand_in.identity == tiny_backend.identity
    assert stand_in.capabilities == tiny_backend.capabilities
    assert inspect.signature(stand_in.continuation_logprobs) == \
        inspect.signature(tiny_backend.continuation_logprobs)
    assert getattr(stand_in, "spec", None) is None  # the model has no such attribute: known without loading
    assert stand_in._local is None
    assert stand_in.encode("2 + 3") == tiny_backend.encode("2 + 3")  # a call: loaded here, once
    assert stand_in._local is not None and stand_in.tokenizer is stand_in._local.tokenizer


@pytest.mark.parametrize("mode", ["echo", "plain"])
def test_the_stand_in_of_an_api_model_answers_capability_checks_without_loading_it(
        tiny_llama_dir: Path, mode: str) -> None:
    """The workers resolve what the server offers when they load the model; the driver's require(), can_score(),
    scoring_note(), isinstance and the class's constants never load it (which would probe the server again)."""
    from helpers.scoring_server import TinyLM, scoring_server
    from robusteval.errors import UserError
    from robusteval.models import LOGPROBS, WHITEBOX, require
    from robusteval.models.base import Backend, can_score, scoring_note
    from robusteval.models.openai_api import OpenAIBackend

    with scoring_server(TinyLM(tiny_llama_dir), mode) as server:
        on_worker = load_backend(server.spec(), max_retries=0)
        description = describe(on_worker)  # what UnitWorker.load sends back
        probes = len(server.requests)
        assert probes >= 1 and description["scoring"] == on_worker.scoring.as_dict()
        stand_in = WorkerModel(on_worker.load_recipe, description)
        assert isinstance(stand_in, Backend) and stand_in.name == on_worker.name
        assert stand_in.scoring == on_worker.scoring
        assert stand_in.capabilities == on_worker.capabilities == on_worker.resolve_capabilities()
        assert can_score(stand_in) is (mode == "echo")
        with pytest.raises(UserError, match="whitebox"):
            require(stand_in, WHITEBOX, "MATCHA")
        if mode == "echo":
            assert require(stand_in, LOGPROBS, "soft labels") is stand_in and scoring_note(stand_in) == ""
        else:
            with pytest.raises(UserError, match=r"offers only: generate \(server: echo: "):
                require(stand_in, LOGPROBS, "soft labels")
            assert scoring_note(stand_in).startswith(" (server: echo: ")
        assert stand_in.__class__ is WorkerModel and OpenAIBackend.__name__ in stand_in._class_path
        assert stand_in._local is None, "the driver loaded the model"
        assert len(server.requests) == probes, "the driver asked the server again"


class WithConstant(HFBackend):
    family = "llama"  # a plain class-level value
    nothing = None


def test_the_stand_in_answers_class_constants_and_loads_for_properties(tiny_backend: Any) -> None:
    stand_in = WorkerModel(tiny_backend.load_recipe, {**describe(tiny_backend),
                                                      "class": f"{__name__}:{WithConstant.__qualname__}"})
    assert stand_in.family == "llama" and stand_in.nothing is None and stand_in._local is None
    assert stand_in.embed_scale == tiny_backend.embed_scale  # a property: the loaded model answers it
    assert stand_in._local is not None
