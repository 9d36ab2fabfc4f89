"""MATCHA on every tokenizer family, as if on a GPU: the prompt ids the attack edits are the whole prompt's ids,
and no tensor the attack path creates is on the wrong device (``helpers.devices`` audits every op)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.devices import audit_devices
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack
from robusteval.attacks.matcha.objective import MatchaObjective, Reference
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.attacks.matcha.token import TokenAttackConfig, token_attack
from robusteval.data.loaders import load_dataset
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.models.tiny import build_tiny_llama
from robusteval.prompts.answer_first import STOP_STRINGS, AnswerFirstPrompt, default_exemplars
from robusteval.seeding import derive_rng
from robusteval.store import RunStore

FAMILIES = ("robusteval", "sentencepiece-prefix", "byte-level", "gemma")
QUESTION = "Tom has 3 apples and buys 4 more apples at the market. How many apples does he have now?"


@pytest.fixture(scope="module", params=FAMILIES)
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    folder = build_tiny_llama(tmp_path_factory.mktemp("family") / request.param, seed=0,
                              tokenizer_family=request.param)
    return request.param, load_backend(f"hf:{folder}")


def runner_for(backend: Any, tmp_path: Path) -> MatchaRunner:
    return MatchaRunner(backend, RunStore.open(tmp_path / "run"), AnswerFirstPrompt(default_exemplars("number")),
                        MatchaConfig(target_answer="clean", steps=2, generation=GenerationOptions(max_new_tokens=8)),
                        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])


def test_prompt_ids_are_the_whole_prompt_ids(family: tuple[str, Any], tmp_path: Path) -> None:
    name, backend = family
    runner = runner_for(backend, tmp_path)
    prefix, head, question, tail = runner.prompt.segments(QUESTION)
    layout = runner.layout(QUESTION)
    whole = backend.bos_ids + backend.tokenizer(prefix + head + question + tail, add_special_tokens=False)["input_ids"]
    assert layout.ids == whole
    assert backend.decode(layout.question).strip() == QUESTION
    # The answer-first pass (eval, transfer) reads the same ids through the generic backend path.
    prefix_ids, prompt_ids = backend.prompt_ids(runner.prompt.prefix, runner.prompt.question_prompt(QUESTION))
    assert prefix_ids + prompt_ids == whole
    separately = backend.bos_ids + [t for s in (prefix, head, " " + question, tail)
                                    for t in backend.tokenizer(s, add_special_tokens=False)["input_ids"]]
    if name == "sentencepiece-prefix":
        assert separately != whole  # encoding segments apart would give a prompt the model never saw
    # The clean pass stores and decodes exactly those ids.
    records = runner.clean_records(load_dataset("jsonl", str(_questions(tmp_path)), answer_type="number"))
    assert records[0]["question_ids"] == layout.question and records[0]["head_ids"] == layout.head
    assert records[0]["tail_ids"] == layout.tail and records[0]["prefix_length"] == len(layout.prefix)


def _questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": QUESTION, "answer": "7"}) + "\n", encoding="utf-8")
    return path


def test_attacks_are_device_clean(family: tuple[str, Any], tmp_path: Path) -> None:
    _, backend = family
    runner = runner_for(backend, tmp_path)
    layout = runner.layout(QUESTION)
    continuation = backend.encode(" The answer is 7. 3 + 4 = 7 apples, so he has 7 apples.")
    reference = Reference(layout.question, continuation, 5)
    with audit_devices(backend) as audit:
        objective = MatchaObjective(backend, layout.prefix, layout.head, layout.tail, reference)
        for variant in ("full", "gcg-suffix", "random-locs"):
            config = TokenAttackConfig(variant, 0.2, 0.5, 2, 3 if variant == "full" else 1)
            result = token_attack(objective, list(layout.question), runner.allowed_tokens, config,
                                  derive_rng(0, "families", variant), lambda ids: (True, {"same_meaning": True}))
            backend.decode_many(layout.prefix, [layout.head + result.question_ids + layout.tail], max_new_tokens=3,
                                stops=[STOP_STRINGS])
        embedding_attack(objective, EmbeddingAttackConfig(0.02, 0.25, 2), seed=1)
    audit.assert_clean()


def test_the_whole_runner_is_device_clean(tiny_trained_dir: Path, tmp_path: Path) -> None:
    """Clean pass, token attack, embedding attack and judging of a real run, all under the audit."""
    backend = load_backend(f"hf:{tiny_trained_dir}")
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=3, answer_type="number")
    with audit_devices(backend) as audit:
        for level in ("token", "embedding"):
            runner = MatchaRunner(backend, RunStore.open(tmp_path / level), AnswerFirstPrompt(
                default_exemplars("number")), MatchaConfig(level=level, target_answer="clean", steps=2,
                                                           generation=GenerationOptions(max_new_tokens=24)),
                reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])
            clean = runner.clean_records(examples)
            attacked = runner.judge(runner.attack_records(examples, clean))
            assert attacked, "nothing was attacked: the audit would have checked only the clean pass"
    audit.assert_clean()
