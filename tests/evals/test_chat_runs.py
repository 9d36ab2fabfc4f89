"""``--chat`` runs through the library pipelines (eval, robustness, word importance, variants eval, transfer's
request) on the tiny Llama, whose tokenizer carries a role chat template: every stored answer is keyed by the
conversation that was asked, chat and system prompt are part of the run identity, and a resumed run asks nothing
again."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
import robusteval.variants as rvv
from helpers.runs import units
from robusteval.attacks.matcha.transfer import TransferConfig
from robusteval.attacks.wordimportance import WordImportanceRunConfig, attack_wordimportance
from robusteval.cli.main import build_parser
from robusteval.errors import UserError
from robusteval.evals.classification import LabelClassifier, example_fields, template_for
from robusteval.evals.robustness import RobustnessConfig, robustness
from robusteval.judging import JudgeOptions
from robusteval.models import GenerationRequest
from robusteval.models.generation import GenerationOptions
from robusteval.models.identity import backend_key
from robusteval.perturbations.spec import CandidateSpec, PerturbationSpec
from robusteval.prompts.answer_first import DEFAULT_SYSTEM_PROMPT, exemplars_for
from robusteval.store import RunStore, unit_key
from robusteval.text.thinking import NO_THINKING

REVIEWS = [("the food was great and the staff were friendly", "positive"),
           ("the room was dirty and the heater was broken", "negative"),
           ("delivery took three days and the box was intact", "positive"),
           ("poor quality, it broke after one day of use", "negative")]
SYSTEM = "Reply with the label only."


def _questions(path: Path) -> rv.DataSpec:
    rows = [{"question": f"Tom has {i} apples and gets {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rv.DataSpec("jsonl", str(path))


def _reviews(path: Path) -> rv.DataSpec:
    path.write_text("".join(json.dumps({"uid": f"r{i}", "review": t, "sentiment": s}) + "\n"
                            for i, (t, s) in enumerate(REVIEWS)), "utf-8")
    return rv.DataSpec("jsonl", str(path), fields="id=uid,question=review,answer=sentiment", answer_type="label")


def _keys(out: Path, stage: str) -> set[str]:
    return {key for _, key, _ in units(out, stage)}


def test_chat_eval_keys_every_answer_by_its_conversation(tiny_backend: Any, tmp_path: Path) -> None:
    data = _questions(tmp_path / "q.jsonl")
    config = rv.EvalConfig(data=data, generation=GenerationOptions(max_new_tokens=6, chat=True))
    out = tmp_path / "eval-chat"
    summary = rv.evaluate(config, tiny_backend, out)
    examples = data.load()
    prompt = exemplars_for(None, examples[0].answer_type)
    requests = [prompt.request(ex.question, max_new_tokens=6, chat=True) for ex in examples]
    assert all(r.key()["messages"][0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT} for r in requests)
    assert all(r.key()["messages"][-1] == {"role": "user", "content": ex.question}
               for r, ex in zip(requests, examples, strict=True))
    expected = {unit_key("answer_first", backend_key(tiny_backend), ex.id, r.key())
                for ex, r in zip(examples, requests, strict=True)}
    assert _keys(out, "answer_first") == expected
    # The stored completions are what the chat request generates.
    stored = {r["id"]: r["completion"] for r in rv.load_run(out).records("answer_first")}
    assert [stored[ex.id] for ex in examples] == [g.text for g in tiny_backend.generate(requests)]
    run = rv.load_run(out)
    assert run.identity["chat"] is True and run.identity["system_prompt"] is None and summary["n"] == 3
    # Resumed: nothing new. Another system prompt is another run, refused in this directory.
    before = units(out)
    rv.evaluate(config, tiny_backend, out)
    assert units(out) == before
    with pytest.raises(UserError, match="system_prompt"):
        rv.evaluate(dataclasses.replace(
            config, generation=dataclasses.replace(config.generation, system_prompt="Be brief.")), tiny_backend, out)
    # The text run of the same data keys its answers differently (and as it always did).
    text = rv.evaluate(dataclasses.replace(config, generation=dataclasses.replace(config.generation, chat=False)),
                       tiny_backend, tmp_path / "eval-text")
    assert text["n"] == 3 and not _keys(tmp_path / "eval-text", "answer_first") & expected


def test_chat_robustness_classifies_through_the_template(tiny_backend: Any, tmp_path: Path) -> None:
    data = _reviews(tmp_path / "reviews.jsonl")
    config = RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets="C-swap",
                              generation=GenerationOptions(chat=True, system_prompt=SYSTEM),
                              label_mode="soft", bootstrap=20)
    out = tmp_path / "rb"
    summary = robustness(config, tiny_backend, out)
    assert summary["n"] == 4 and summary["label_mode"] == "soft"
    examples = data.load()
    template = template_for(None, "jsonl", examples)
    classifier = LabelClassifier(tiny_backend, template, soft=True, chat=True, system_prompt=SYSTEM)
    fields = example_fields(examples[0])
    key = classifier.request(fields).key()
    assert key["messages"] == template.messages(fields, SYSTEM)
    assert key["messages"][0] == {"role": "system", "content": SYSTEM}
    assert examples[0].question in key["messages"][1]["content"]
    stored = _keys(out, "classify")
    assert {classifier.key(example_fields(ex)) for ex in examples} <= stored
    with RunStore.open_existing(out) as store:
        record = store.get("classify", classifier.key(fields))
    # Soft labels were scored at the start of the assistant's reply (no leading space).
    scores = tiny_backend.continuation_logprobs("", [template.verbalizers[label] for label in template.verbalizers],
                                                messages=template.messages(fields, SYSTEM))
    assert list(record["label_logprobs"].values()) == pytest.approx(scores, abs=1e-5)
    assert rv.load_run(out).identity["chat"] is True
    before = units(out)
    robustness(config, tiny_backend, out)
    assert units(out) == before


def test_chat_wordimportance_asks_the_chat_classifier(tiny_backend: Any, tmp_path: Path) -> None:
    data = _reviews(tmp_path / "reviews.jsonl")
    config = WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method="C-swap", budget=8,
                                     generation=GenerationOptions(chat=True),
                                     rates="0.3")
    out = tmp_path / "wi"
    summary = attack_wordimportance(config, tiny_backend, out)
    assert summary["n"] == 4 and summary["confidence"] == "logprob"
    examples = data.load()
    classifier = LabelClassifier(tiny_backend, template_for(None, "jsonl", examples), soft=True, chat=True)
    # Every original text was asked as a chat (its key holds the conversation); perturbed ones follow.
    assert {classifier.key(example_fields(ex)) for ex in examples} <= _keys(out, "classify")
    assert "messages" in classifier.request(example_fields(examples[0])).key()
    assert rv.load_run(out).identity["chat"] is True


def test_chat_variants_eval_sends_the_system_and_user_turns(tiny_backend: Any, tmp_path: Path) -> None:
    with resources.as_file(resources.files("robusteval.variants") / "example_templates.yaml") as templates:
        made = rvv.instantiate(rvv.InstantiateConfig(str(templates), n=1, out=str(tmp_path / "inst.jsonl")))
    config = rvv.VariantsEvalConfig(str(tmp_path / "inst.jsonl"),
                                    generation=GenerationOptions(max_new_tokens=4, chat=True,
                                                                 system_prompt="Be brief."))
    out = tmp_path / "var"
    rvv.evaluate_variants(config, tiny_backend, out)
    expected = set()
    for inst in made.instances:
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": rvv.pipeline.MATH_PROMPT.format(question=inst.question)}]
        request = GenerationRequest(max_new_tokens=4, seed=rvv.pipeline.sample_seed(config.seed, 0), chat=True,
                                       messages=tuple(messages), stop=rvv.pipeline.stop_strings(NO_THINKING))
        expected.add(unit_key("variants_generation", backend_key(tiny_backend), inst.id, 0, request.key()))
    assert _keys(out, "variants_generation") == expected
    assert rv.load_run(out).identity["system_prompt"] == "Be brief."


def test_transfer_requests_follow_chat() -> None:
    from robusteval.attacks.matcha.transfer import SourceRun, TransferRunner

    prompt = exemplars_for(None, "number")
    source = SourceRun(Path("."), {}, prompt.exemplars, "math", "number", [], 0, 0)

    def runner(chat: bool, system_prompt: str | None = None) -> TransferRunner:
        return TransferRunner(None, None, source, reasoning_judge=lambda items: [], temperature=0.7,  # type: ignore[arg-type]
                              seed=3, max_new_tokens=16, chat=chat, system_prompt=system_prompt)

    request = runner(True, "").request("What is 2 + 2?")
    assert request.messages == tuple(prompt.messages("What is 2 + 2?", system_prompt=""))
    assert request.messages[0]["role"] == "user"  # '' = no system turn
    assert (request.temperature, request.seed, request.max_new_tokens) == (0.7, 3, 16)
    text = runner(False).request("What is 2 + 2?")
    assert text.prefix == prompt.prefix and text.prompt == prompt.question_prompt("What is 2 + 2?")
    assert "messages" not in text.key()


def test_system_prompt_without_chat_is_refused(tmp_path: Path) -> None:
    """Refused when the config is built (its generation block), in the block's own words (the CLI's flags are for
    the CLI)."""
    data = _questions(tmp_path / "q.jsonl")
    with pytest.raises(UserError, match=r"^GenerationOptions.system_prompt: needs chat=True"):
        rv.EvalConfig(data=data, generation=GenerationOptions(system_prompt="x"))
    with pytest.raises(UserError, match=r"^GenerationOptions.system_prompt: needs chat=True"):
        RobustnessConfig(data=data, sets="C-swap", generation=GenerationOptions(system_prompt="x"))
    with pytest.raises(UserError, match=r"^GenerationOptions.system_prompt: needs chat=True"):
        WordImportanceRunConfig(data=data, method="C-swap", generation=GenerationOptions(system_prompt="x"))
    with pytest.raises(UserError, match=r"^GenerationOptions.system_prompt: needs chat=True"):
        rvv.VariantsEvalConfig("inst.jsonl", generation=GenerationOptions(system_prompt="x"))
    with pytest.raises(UserError, match=r"^GenerationOptions.system_prompt: needs chat=True"):
        TransferConfig(source=str(tmp_path), generation=GenerationOptions(system_prompt="x"))


@pytest.mark.parametrize("command", [
    ["eval", "--chat", "--system-prompt", "S"],
    ["robustness", "--chat", "--system-prompt", "S"],
    ["attack", "wordimportance", "--chat", "--system-prompt", "S"],
    ["variants", "eval", "--chat", "--system-prompt", "S"],
    ["transfer", "--chat", "--system-prompt", "S", "--judge-chat"],
    ["attack", "matcha", "--judge-chat"],
])
def test_the_commands_have_the_chat_flags(command: list[str]) -> None:
    args = build_parser().parse_args([*command, "--endpoint", "chat"])
    assert args.endpoint == "chat"
    if "--chat" in command:
        assert args.chat is True and args.system_prompt == "S"
    if "--judge-chat" in command:
        assert args.judge_chat is True
    assert JudgeOptions.__dataclass_fields__["judge_chat"].default is False
