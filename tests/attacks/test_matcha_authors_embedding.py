"""``--count authors`` at the embedding level and in the exemplar text (issue 34, items 6 and 7).

The authors' embedding attack (``inference_emb_attack.py``, IEA) starts PGD at the clean input (L276: noise of
radius 0), perturbs every prompt position from the end of ``tokenizer(given_prompt + "Q: ")`` to the end of the
prompt, so the answer trigger too (L179-182, L367), and scales eps by the largest |coordinate| of the prompt's and
the response's embeddings (L263-272). Their exemplars read ``Q: …\\nA: The answer is 6 <rationale>.`` (``utils.py``
L291-292). The expected values below are recomputed from those lines with the tokenizer, not with robusteval's
helpers.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

import robusteval as rv
from robusteval.attacks.matcha.config import MatchaConfig
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack, embedding_scale
from robusteval.attacks.matcha.layout import layout_from_text
from robusteval.attacks.matcha.objective import MatchaObjective, Reference
from robusteval.attacks.matcha.pipeline import matcha_identity
from robusteval.attacks.matcha.run import MatchaRunner
from robusteval.attacks.matcha.transfer import resolve_exemplars
from robusteval.data.loaders import load_dataset
from robusteval.errors import UserError
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import (
    AnswerFirstPrompt,
    Exemplar,
    ExemplarSet,
    default_exemplars,
    load_exemplars,
)
from robusteval.store import RunStore, unit_key

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


@pytest.fixture(scope="module")
def backend(tiny_trained_dir: Path) -> Any:
    return load_backend(f"hf:{tiny_trained_dir}", device="cpu")


def _runner(backend: Any, path: Path, counting: str, steps: int) -> MatchaRunner:
    config = MatchaConfig(level="embedding", target_answer="clean", generation=GenerationOptions(max_new_tokens=24), steps=steps, seed=3,
                          counting=counting)
    return MatchaRunner(backend, RunStore.open(path), AnswerFirstPrompt(default_exemplars("number"), counting), config,
                        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                        semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])


@pytest.fixture(scope="module")
def authors_runs(backend: Any, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[MatchaRunner, list[Any], list[dict[str, Any]]]:
    runner = _runner(backend, tmp_path_factory.mktemp("authors_emb") / "run", "authors", steps=0)
    examples = load_dataset("jsonl", SAMPLE, limit=3, answer_type="number")
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert clean
    return runner, examples, clean


# ------------------------------------------------------------------------------------------- the configuration


def test_the_counting_decides_the_pgd_start_span_and_eps_base(tmp_path: Path) -> None:
    authors = MatchaConfig(level="embedding", counting="authors")
    assert (authors.random_start, authors.pgd_span, authors.eps_base) == (False, "question+trigger", "prompt+response")
    ours = MatchaConfig(level="embedding")
    assert (ours.random_start, ours.pgd_span, ours.eps_base) == (True, "question", "prompt")
    token = MatchaConfig(level="token", counting="authors")  # the token level has no PGD
    assert (token.pgd_span, token.eps_base) == ("question", "prompt")
    # Our identity is what it always was; the authors' names what applies.
    assert {"pgd_span", "eps_base"}.isdisjoint(ours.identity_record()) and ours.identity_record()["random_start"]
    record = authors.identity_record()
    assert (record["random_start"], record["pgd_span"], record["eps_base"]) == (False, "question+trigger",
                                                                                "prompt+response")
    with pytest.raises(UserError, match="pgd_span"):
        MatchaConfig(level="embedding", pgd_span="everything")

    data = rv.DataSpec(dataset="jsonl", data_file=SAMPLE, answer_type="number")
    run_ours = rv.MatchaRunConfig(data=data, level="embedding")
    run_authors = rv.MatchaRunConfig(data=data, level="embedding", counting="authors")  # random_start left True
    assert run_ours.hyperparameters().random_start is True
    assert run_authors.hyperparameters().random_start is False
    assert run_authors.hyperparameters().pgd_span == "question+trigger"
    assert any("random point" in d for d in run_ours.deviations("number"))
    assert any("question only" in d for d in run_ours.deviations("number"))
    assert not any("random point" in d or "question only" in d for d in run_authors.deviations("number"))
    assert not any("random point" in d for d in dataclasses.replace(run_ours, random_start=False).deviations("number"))
    with pytest.raises(UserError, match="chat"):
        rv.MatchaRunConfig(data=data, level="embedding", counting="authors", generation=rv.GenerationOptions(chat=True))


# ------------------------------------------------------------------------------------------- the attack


def test_the_authors_pgd_starts_at_the_clean_input(authors_runs: tuple[MatchaRunner, list[Any], list[dict[str, Any]]],
                                                   tmp_path: Path) -> None:
    runner, examples, clean = authors_runs
    by_id = {e.id: e for e in examples}
    out = runner.attack_one(by_id[clean[0]["id"]], clean[0])
    assert out["pgd_start"] == "clean" and out["max_abs_delta"] == 0.0
    assert out["perturbed_completion"] == clean[0]["completion"]
    # Ours, zero steps: already moved (a random start).
    ours = _runner(runner.backend, tmp_path / "ours", "ours", steps=0)
    moved = ours.attack_one(by_id[clean[0]["id"]], ours.clean_records([by_id[clean[0]["id"]]])[0])
    assert moved["pgd_start"] == "random" and moved["max_abs_delta"] > 0


def test_the_authors_span_is_question_and_trigger_from_their_tokenisation(
        authors_runs: tuple[MatchaRunner, list[Any], list[dict[str, Any]]]) -> None:
    runner, examples, clean = authors_runs
    tokenizer = runner.backend.tokenizer
    example = next(e for e in examples if e.id == clean[0]["id"])
    given = runner.prompt.prefix
    # IEA L179-184: the span is [len(tokenizer(given_prompt + "Q: ")), len(tokenizer(prompt))), their (Llama-3)
    # tokenizer adding a BOS to both; this one adds none, so the model's BOS is counted here.
    bos = len(runner.backend.bos_ids)
    start = bos + len(tokenizer(given + "Q: ", add_special_tokens=False)["input_ids"])
    end = bos + len(tokenizer(given + "Q: " + example.question.strip() + "\nA:", add_special_tokens=False)["input_ids"])
    out = runner.attack_one(example, clean[0])
    assert out["question_span"] == [start, end] and out["pgd_span"] == "question+trigger"
    layout = runner.layout(example.question)
    ours_start = len(layout.prefix) + len(layout.head)
    # On this byte-level BPE "Q: " alone ends in a lone space token, which the whole prompt merges into the first
    # question word: their span leaves that word out and ends with the trigger.
    assert start == ours_start + 1
    assert end == len(layout.ids) and end - len(layout.tail) > start

    # One PGD step moves the trigger's embeddings, never the first question token's.
    edited = runner.authors_pgd_layout(example)
    reference = Reference(edited.question, clean[0]["continuation_ids"], clean[0]["n_answer_tokens"])
    objective = MatchaObjective(runner.backend, edited.prefix, edited.head, edited.tail, reference)
    result = embedding_attack(objective, EmbeddingAttackConfig(steps=1, random_start=False))
    with torch.no_grad():
        before = runner.backend.embed(torch.tensor(layout.ids[start:end]))
    moved = (result.question_embeds - before).abs().amax(dim=1)
    assert bool((moved[-len(layout.tail):] > 0).all())
    assert result.question_embeds.shape[0] == end - start


def _their_eps(backend: Any, prompt: str, response: str, p_size: float) -> float:
    """IEA L184-189, L263-272: inf-norm rows of [embed(tokenizer(prompt)); embed(tokenizer(' ' + response))]."""
    tokenizer = backend.tokenizer
    with torch.no_grad():
        whole = torch.cat([backend.embed(torch.tensor(tokenizer(prompt)["input_ids"])),
                           backend.embed(torch.tensor(tokenizer(" " + response)["input_ids"]))])
    return p_size * float(torch.norm(whole, p=float("inf"), dim=1).max())


def test_the_authors_eps_is_over_prompt_and_response(
        authors_runs: tuple[MatchaRunner, list[Any], list[dict[str, Any]]]) -> None:
    runner, examples, clean = authors_runs
    backend = runner.backend
    for record in clean:
        example = next(e for e in examples if e.id == record["id"])
        out = runner.attack_one(example, record)
        prompt = runner.prompt.prefix + "Q: " + example.question.strip() + "\nA:"
        assert out["epsilon"] == pytest.approx(_their_eps(backend, prompt, record["completion"], 0.005), rel=1e-6)

    # A response holding the vocabulary's largest coordinate: eps over the prompt alone is smaller.
    table = backend.embedding_matrix.detach().abs().amax(dim=1)
    layout = layout_from_text(backend, "", "Q: ", "Tom has 3 apples.", "\nA:")
    for token in table.argsort(descending=True).tolist():
        piece = backend.decode([token])
        ids = backend.tokenizer(" The answer is 3." + piece, add_special_tokens=False)["input_ids"]
        if piece.startswith(" ") and piece.strip().isalpha() and token in ids and token not in layout.ids:
            break
    else:
        pytest.skip("no word token to plant")
    reference = Reference(layout.question, ids, 4)
    objective = MatchaObjective(backend, layout.prefix, layout.head, layout.tail, reference)
    response = backend.decode(ids)
    theirs = _their_eps(backend, "Q: Tom has 3 apples.\nA:", response, 1.0)
    assert embedding_scale(objective, "prompt+response") == pytest.approx(theirs, rel=1e-6)
    assert embedding_scale(objective, "prompt") < theirs


# ------------------------------------------------------------------------------------------- the exemplar text

TREES = Exemplar("There are 15 trees in the grove. After planting there are 21. How many were planted?", "6",
                 "Let's think step by step. There were 21 - 15 = 6.")


def test_the_exemplar_text_under_each_counting() -> None:
    exemplars = ExemplarSet("t", "number", (TREES, Exemplar("Is 2 even?", "yes", "2 = 2 x 1, so it is even")))
    q = "Q: There are 15 trees in the grove. After planting there are 21. How many were planted?\nA:"
    # utils.py L291-292: x + " " + "The answer is" + " " + y + " " + z + ".\n\n"
    assert AnswerFirstPrompt(exemplars, "authors").prefix == (
        q + " The answer is 6 Let's think step by step. There were 21 - 15 = 6..\n\n"
        "Q: Is 2 even?\nA: The answer is yes 2 = 2 x 1, so it is even.\n\n")
    assert AnswerFirstPrompt(exemplars).prefix == (
        q + " The answer is 6. Let's think step by step. There were 21 - 15 = 6.\n\n"
        "Q: Is 2 even?\nA: The answer is yes. 2 = 2 x 1, so it is even\n\n")
    assert AnswerFirstPrompt(exemplars, "authors").exemplar_turns()[0][1] == (
        "The answer is 6 Let's think step by step. There were 21 - 15 = 6..")
    with pytest.raises(ValueError, match="style"):
        AnswerFirstPrompt(exemplars, "theirs")


def test_an_exemplar_file_and_the_run_identity_take_the_authors_form(tmp_path: Path) -> None:
    """``--exemplars FILE`` in Wei et al.'s layout (their ``basic_cot_prompts`` files') is written their way
    under --count authors: the run's prompt prefix (its identity's hash) is the hand-written text."""
    path = tmp_path / "wei.json"
    path.write_text(json.dumps({"prompt": [{"question": f"Q: {TREES.question}\nA:", "rationale": TREES.rationale,
                                            "pred_ans": "6"}]}), encoding="utf-8")
    theirs = f"Q: {TREES.question}\nA: The answer is 6 {TREES.rationale}.\n\n"
    ours = f"Q: {TREES.question}\nA: The answer is 6. {TREES.rationale}\n\n"
    data = rv.DataSpec(dataset="jsonl", data_file=SAMPLE, answer_type="number")
    examples = load_dataset("jsonl", SAMPLE, limit=1, answer_type="number")
    for counting, text in (("authors", theirs), ("ours", ours)):
        config = rv.MatchaRunConfig(data=data, prompt=rv.PromptOptions(exemplars=str(path)), counting=counting)
        assert matcha_identity(config, None, examples)["prefix_hash"] == unit_key(text)
    # A transfer from an authors run finds its exemplars by that hash (and refuses the other form).
    identity = {"exemplars": str(path), "prefix_hash": unit_key(theirs), "config": {"counting": "authors"}}
    assert resolve_exemplars(identity)[0] == load_exemplars(str(path))
    with pytest.raises(UserError, match="exemplar"):
        resolve_exemplars({**identity, "config": {}})
