"""The adversarial prompt search (issue 39, item 2) on the tiny model and the bundled yes/no sample: the budget
is never exceeded (the real backend's calls counted), the held-out set is disjoint from the search set, the
stored prompt differs from the clean one only in the instruction, and a rerun asks the model nothing."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.config import ConfigError
from robusteval.evals.prompt_robustness import PromptSearchConfig, prompt_search
from robusteval.evals.prompt_robustness.search import split_examples
from robusteval.perturbations.spec import PerturbationSpec

YESNO = str(resources.files("robusteval.data.samples").joinpath("yesno.jsonl"))


class CountingBackend:
    """The real backend, every prompt it is asked (generated or scored) counted."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.generated = 0
        self.scored = 0
        self.prompts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def generate(self, requests: Sequence[Any]) -> Any:
        self.generated += len(requests)
        self.prompts += [str(r.prompt) for r in requests]
        return self._backend.generate(requests)

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], **kwargs: Any) -> Any:
        self.scored += 1
        return self._backend.continuation_logprobs(prompt, continuations, **kwargs)


def _config(**options: Any) -> PromptSearchConfig:
    values: dict[str, Any] = {"methods": "C-swap,C-keyboard", "budget": 100, "search_size": 5, "bootstrap": 200,
                              **options}
    return PromptSearchConfig(data=rv.DataSpec("jsonl", YESNO, answer_type="label"),
                              perturbation=PerturbationSpec(language="en"), **values)


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_search_keeps_its_budget_holds_out_and_resumes(mode: str, tiny_backend: Any, tmp_path: Path) -> None:
    backend = CountingBackend(tiny_backend)
    out = tmp_path / mode
    summary = prompt_search(_config(label_mode=mode), backend, out, batch_size=8)
    n_held = len(summary["held_out_ids"])
    # Search queries: every model call on a search-set example; the held-out set asks clean + found once each.
    search_questions = [q for q in summary["search_ids"]]
    assert summary["queries"] <= 100
    assert backend.generated - 2 * n_held <= 100
    if mode == "soft":
        assert backend.scored - 2 * n_held <= 100
    assert summary["queries"] == backend.generated - 2 * n_held or summary["found_instruction"] == \
        summary["clean_instruction"]
    assert set(summary["search_ids"]).isdisjoint(summary["held_out_ids"])
    assert len(search_questions) == 5 and len(summary["search_ids"]) + n_held == 20
    # The found prompt differs from the clean one only in its instruction paragraph.
    clean, found = summary["clean_prefix"].split("\n\n"), summary["found_prefix"].split("\n\n")
    assert clean[1:] == found[1:] and clean[0] == summary["clean_instruction"]
    assert found[0] == summary["found_instruction"]
    if summary["changed"]:
        assert summary["edits"] and found[0] != clean[0]
    held = summary["held_out"]
    assert held["n"] == n_held and held["acc_clean_ci95"] is not None
    assert held["prompts"]["found"]["acc_ci95"] is not None
    before = (backend.generated, backend.scored)
    again = prompt_search(_config(label_mode=mode), backend, out, batch_size=8)
    assert (backend.generated, backend.scored) == before  # resumed: nothing asked
    assert again["found_instruction"] == summary["found_instruction"] and again["queries"] == summary["queries"]


def test_split_is_seeded_and_disjoint() -> None:
    search, held = split_examples(20, 5, 3)
    assert split_examples(20, 5, 3) == (search, held)
    assert len(search) == 5 and not set(search) & set(held) and sorted(search + held) == list(range(20))
    assert split_examples(20, 5, 4) != (search, held)


def test_bad_values_are_refused_before_a_model_loads() -> None:
    with pytest.raises(ConfigError, match="budget"):
        _config(budget=3)
    with pytest.raises(ConfigError, match="max_rate"):
        _config(max_rate=0)
    with pytest.raises(ConfigError, match="methods"):
        _config(methods="C-swapp")
    with pytest.raises(ConfigError, match="search_size"):
        prompt_search(_config(search_size=20), "hf:/no/such/model", "/nonexistent/run")  # type: ignore[arg-type]
