"""MATCHA through a chat template: the editable span is the question inside the final user turn, the exemplar
turns are the cached prefix, the teacher-forced span is the assistant's reply."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.attacks.matcha.pipeline import OUTCOME_STAGE, MatchaRunConfig, attack_matcha
from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.data.spec import DataSpec
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.runs import load_run
from robusteval.store import RunStore


def test_chat_layout_is_the_rendered_conversation(tiny_trained_dir: Path, tmp_path: Path) -> None:
    backend = load_backend(f"hf:{tiny_trained_dir}")
    prompt = AnswerFirstPrompt(default_exemplars("number"))
    runner = MatchaRunner(backend, RunStore.open(tmp_path / "run"), prompt, MatchaConfig(), chat=True,
                          reasoning_judge=lambda items: [{} for _ in items],
                          semantic_judge=lambda pairs: [{"same_meaning": True} for _ in pairs])
    question = "Tom has 3 apples and buys 4 more. How many apples does he have?"
    layout = runner.layout(question)
    messages = prompt.messages(question)
    rendered = backend.chat_text(messages)
    whole = backend.tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert layout.ids == whole  # the four parts are exactly the conversation's tokens
    assert backend.decode(layout.question).strip() == question
    # The cached prefix is the exemplar turns, the same for every question.
    prefix_text = backend.chat_prefix_text(messages)
    assert prefix_text and rendered.startswith(prefix_text)
    assert layout.prefix == runner.layout("What is 2 + 5?").prefix
    # ... and the same ids the backend caches when it generates from these messages (eval, transfer).
    assert layout.prefix == backend.chat_ids(messages)[0]
    # The head opens the user turn; the tail closes it and opens the assistant's reply, which is generated.
    assert "<|user|>" in backend.tokenizer.decode(layout.head)
    assert backend.tokenizer.decode(layout.tail).rstrip().endswith("<|assistant|>")


def test_chat_attack_runs_end_to_end(tiny_trained_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "q.jsonl"
    rows = [{"question": f"Tom has {i} apples and buys {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = MatchaRunConfig(data=DataSpec("jsonl", str(data)), target_answer="clean", steps=1,
                             generation=GenerationOptions(max_new_tokens=24, chat=True,
                                                          system_prompt="Answer first, then explain."))
    summary = attack_matcha(config, load_backend(f"hf:{tiny_trained_dir}"), tmp_path / "run")
    run = load_run(tmp_path / "run")
    assert run.identity["chat"] is True and run.identity["system_prompt"] == "Answer first, then explain."
    assert any("chat template" in d for d in summary["deviations_from_paper"])
    clean = run.records("matcha_clean")
    assert len(clean) == 3 and all(r["question_ids"] and r["tail_ids"] for r in clean)
    for row in run.records("matcha_attack"):
        start, end = row["question_span"]
        assert end - start == len(next(r for r in clean if r["id"] == row["id"])["question_ids"])
    assert len(run.records(OUTCOME_STAGE)) == 3
