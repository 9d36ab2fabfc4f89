"""Which inserted positions a token step replaces (issue 34, the gather by position): the authors' code
(``--replacement-positions authors``, the default under --count authors) and its correction (robusteval's own)."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

from robusteval.attacks.matcha.token import authors_locations, authors_positions, corrected_positions
from robusteval.judges import ArithmeticJudge, ReasoningItem
from robusteval.models.generation import GenerationOptions
from robusteval.store import RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
EYE = torch.eye(6)  # embeddings = identity: an embedding gradient is then the one-hot gradient itself


def test_the_authors_gather_reads_row_i_at_the_vocabulary_id_of_location_i() -> None:
    lead = torch.zeros(3, 6)  # d(-L_opt)/d(embedding) of the whole input's first 3 rows (BOS first)
    # Their -grad gathered at (row i, column locations[i]): rows 0, 1, 2 at columns 4, 1, 5.
    lead[0, 4], lead[1, 1], lead[2, 5] = -0.5, -2.0, 1.0  # their values: 0.5, 2.0, -1.0
    lead[1, 4] = lead[2, 1] = -9.0  # the locations' own rows and columns: never read by their gather
    locations = [4, 1, 5]
    assert authors_positions(lead, EYE, locations, 0.5) == [1]  # int(3 x 0.5) = 1 (ceil would take 2)
    assert authors_positions(lead, EYE, locations, 0.9) == [1, 4]  # int(2.7) = 2, largest first
    assert authors_positions(lead, EYE, locations, 0.1) == [1]  # int(0.3) = 0: at least 1
    assert authors_positions(lead, EYE, locations, 1.0) == [1, 4, 5]
    tied = lead.clone()
    tied[0, 4] = -2.0  # ties with row 1: the earlier location first
    assert authors_positions(tied, EYE, locations, 0.9) == [4, 1]
    with pytest.raises(ValueError, match="past the vocabulary"):  # their gather fails there
        authors_positions(lead, EYE, [4, 1, 6], 0.5)


def test_the_authors_gather_equals_the_one_hot_product_of_the_scaled_matrix() -> None:
    """Entry (i, locations[i]) of lead @ (scale x E)^T, read without the product: the same choice as the full
    one-hot gradient their code computes (random matrix, a scale as Gemma's sqrt(H))."""
    generator = torch.Generator().manual_seed(0)
    embeddings, scale = torch.randn(50, 16, generator=generator), 4.0
    for trial in range(20):
        lead = torch.randn(6, 16, generator=generator)
        locations = torch.randperm(50, generator=generator)[:6].tolist()
        onehot = lead @ (embeddings * scale).T  # what their gather reads, [L, V]
        values = torch.gather(-onehot, 1, torch.tensor(locations).view(-1, 1))[:, 0].tolist()
        order = sorted(range(6), key=lambda i: -values[i])
        for ratio in (0.2, 0.5, 1.0):
            count = max(1, int(6 * ratio))
            assert authors_positions(lead, embeddings, locations, ratio, scale) == \
                [locations[i] for i in order[:count]], (trial, ratio)


def test_the_authors_gather_makes_no_vocabulary_sized_tensor() -> None:
    """A vocabulary of 2^40 ids (a stride-0 view: no memory) is read at its locations only; the product over the
    whole vocabulary (and the scaled copy the attack made per example) cannot even be allocated."""
    generator = torch.Generator().manual_seed(1)
    row = torch.randn(1, 8, generator=generator)
    vocabulary = row.expand(2**40, 8)
    lead = torch.randn(3, 8, generator=generator)
    values = (-(lead * row * 2.0).sum(-1)).tolist()
    locations = [5, 2**39, 7]
    expected = [locations[i] for i in sorted(range(3), key=lambda i: -values[i])]
    assert authors_positions(lead, vocabulary, locations, 1.0, 2.0) == expected


def test_the_corrected_choice_reads_each_inserted_position_at_its_current_token() -> None:
    ids = [2, 5, 0, 1, 3, 4]
    inserted = [1, 3, 4]  # current tokens 5, 1, 3
    grad = torch.zeros(6, 6)
    grad[1, 5], grad[3, 1], grad[4, 3] = 0.3, 0.9, -0.2
    grad[0, 1] = grad[1, 4] = 5.0  # rows and columns the authors' gather would read instead
    assert corrected_positions(grad, EYE[[ids[p] for p in inserted]], inserted, 0.5) == [1, 0]  # ceil(1.5) = 2: positions 3 and 1
    assert corrected_positions(grad, EYE[[ids[p] for p in inserted]], inserted, 0.2) == [1]


def test_their_inserted_locations_come_from_a_greedy_walk() -> None:
    assert authors_locations([7, 8, 9], [7, 5, 8, 9, 6]) == [1, 4]
    # An inserted 8 before the clean 8 is reported one later (where the walk finds the mismatch).
    assert authors_locations([7, 8, 9], [7, 8, 8, 9]) == [2]
    assert authors_locations([7, 8, 9], [7, 8, 9, 9]) == [3]
    assert authors_locations([7, 8], [7, 9]) == []  # equal lengths: none (IRD 117)


def one_exemplar_prompt(counting: str) -> Any:
    from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars

    full = default_exemplars("number")
    # One exemplar: the prompt stays under the tiny model's 600 ids, which their gather reads as vocabulary ids.
    return AnswerFirstPrompt(dataclasses.replace(full, exemplars=full.exemplars[:1]), counting)


def runner_for(tiny_trained_dir: Path, tmp_path: Path, prompt: Any, **config: Any) -> Any:
    from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
    from robusteval.models import load_backend

    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    arith = ArithmeticJudge()

    def judge(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        return [{"reasoning_correct": v.label} for v in arith.judge([ReasoningItem(*i) for i in items])]

    settings = {"target_answer": "clean", "generation": GenerationOptions(max_new_tokens=24), "steps": 2, "seed": 3, "counting": "authors",
                "topk_ratio": 0.5, "insert_ratio": 0.5, **config}
    return MatchaRunner(backend, RunStore.open(tmp_path / "run"), prompt, MatchaConfig(**settings),
                        reasoning_judge=judge, semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])


def test_a_tiny_attack_under_the_authors_counting_replaces_their_positions(tiny_trained_dir: Path,
                                                                           tmp_path: Path) -> None:
    from robusteval.data.loaders import load_dataset

    runner = runner_for(tiny_trained_dir, tmp_path, one_exemplar_prompt("authors"))
    assert runner.replacement_positions == "authors"
    examples = {ex.id: ex for ex in load_dataset("jsonl", SAMPLE, limit=4, answer_type="number")}
    clean = [r for r in runner.clean_records(list(examples.values())) if runner.attackable(r)[0]]
    assert clean
    stepped = 0
    for record in clean:
        attacked = runner.attack_one(examples[record["id"]], record)
        assert not attacked.get("skipped")
        inserted = attacked["inserted_positions"]
        for step in attacked["steps"][:-1]:
            chosen = step["replacement_positions"]  # their locations, largest -grad first
            assert len(chosen) == max(1, int(len(inserted) * 0.5))
            assert {p["position"] for p in step["proposals"]} <= set(chosen)
            stepped += 1
    assert stepped > 0


def test_their_gather_past_the_vocabulary_skips_the_example_with_the_reason(tiny_trained_dir: Path,
                                                                           tmp_path: Path) -> None:
    from robusteval.data.loaders import load_dataset
    from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars

    examples = load_dataset("jsonl", SAMPLE, limit=2, answer_type="number")
    for positions in ("authors", "corrected"):
        runner = runner_for(tiny_trained_dir, tmp_path / positions, AnswerFirstPrompt(default_exemplars("number")),
                            replacement_positions=positions, steps=1)
        clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
        assert clean
        by_id = {ex.id: ex for ex in examples}
        attacked = runner.attack_one(by_id[clean[0]["id"]], clean[0])
        if positions == "authors":  # 8 exemplars: the prompt is longer than the tiny model's 600 ids
            assert "past the model's 600 ids" in attacked["skipped"]
        else:
            assert not attacked.get("skipped") and "replacement_positions" not in attacked["steps"][0]


def test_the_choice_is_recorded_and_refused_outside_the_authors_counting() -> None:
    import robusteval as rv
    from robusteval.errors import UserError

    data = rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number")
    authors = rv.MatchaRunConfig(data=data, counting="authors")
    assert authors.hyperparameters().identity_record()["replacement_positions"] == "authors"
    assert any("gather reads row i" in d for d in authors.deviations("number"))
    corrected = rv.MatchaRunConfig(data=data, counting="authors", replacement_positions="corrected")
    assert corrected.hyperparameters().identity_record()["replacement_positions"] == "corrected"
    assert any("corrected: the authors' code gathers by position" in d for d in corrected.deviations("number"))
    ours = rv.MatchaRunConfig(data=data)
    assert "replacement_positions" not in ours.hyperparameters().identity_record()
    assert not any("gather" in d for d in ours.deviations("number"))
    embedding = rv.MatchaRunConfig(data=data, counting="authors", level="embedding")
    assert "replacement_positions" not in embedding.hyperparameters().identity_record()
    for bad in ({"replacement_positions": "authors"},
                {"replacement_positions": "corrected", "counting": "authors", "level": "embedding"}):
        with pytest.raises(UserError, match="replacement_positions"):
            rv.MatchaRunConfig(data=data, **bad)


def test_the_leading_rows_gradient_is_that_of_the_whole_input(tiny_trained_dir: Path, tmp_path: Path) -> None:
    """The rows their gather reads (the whole input's first rows, BOS and exemplars) against a plain forward of the
    model over the whole input's embeddings, as theirs differentiates it (no prefix cache, no padding)."""
    from robusteval.attacks.matcha.objective import MatchaObjective, Reference
    from robusteval.data.loaders import load_dataset

    runner = runner_for(tiny_trained_dir, tmp_path, one_exemplar_prompt("authors"))
    (example,) = load_dataset("jsonl", SAMPLE, limit=1, answer_type="number")
    (record,) = runner.clean_records([example])
    layout = runner.layout(example.question)
    reference = Reference(record["question_ids"], record["continuation_ids"], record["n_answer_tokens"])
    objective = MatchaObjective(runner.backend, layout.prefix, layout.head, layout.tail, reference)
    lead = objective.leading_gradient(layout.question, 5)
    whole = [*layout.ids, *record["continuation_ids"][:-1]]
    embeds = runner.backend.embed(torch.tensor(whole)).detach().requires_grad_(True)
    logits = runner.backend.model(inputs_embeds=embeds[None]).logits
    terms = objective.terms(logits[:, logits.shape[1] - objective.m:])
    (expected,) = torch.autograd.grad(-terms.total[0], embeds)
    assert lead.shape == (5, embeds.shape[1]) and expected[:5].abs().max() > 0
    torch.testing.assert_close(lead, expected[:5], rtol=1e-4, atol=1e-6)
