"""``--count authors`` (issue 26): the MATCHA authors' success rule, judge input, insertions and denominator, next
to robusteval's own counting; abstentions counted apart under both.

The hand-worked cases below are the authors' rule read off their code (``inference_tok_random_dual.py``: a success
is a kept answer AND (the LLM judge rates 0 OR ``check_all_equations_correct`` finds a false equation OR either
reasoning is empty); the denominator is every question answered correctly before perturbation)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from robusteval.attacks.matcha.authors import (
    authors_insertions,
    authors_reasoning,
    authors_verdicts,
    collapse_repeats,
    insertion_count,
    insertion_slots,
    vocabulary_ids,
)
from robusteval.attacks.matcha.lockstep import Gate
from robusteval.attacks.matcha.pipeline import reasoning_spec_for
from robusteval.cli.main import main
from robusteval.config import with_options
from robusteval.judges import AllMustPass, ArithmeticJudge, ReasoningItem, Verdict
from robusteval.metrics.matcha import matcha_metrics, outcome
from robusteval.models.generation import GenerationOptions
from robusteval.store import SUMMARY_NAME, RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


class ScriptedLLMJudge:
    """Stands in for the LLM member only (the rule and the metrics are under test): a fixed label per candidate
    reasoning, None for an unreadable verdict."""

    name = "llm:scripted"
    task = "reasoning"

    def __init__(self, labels: dict[str, bool | None]):
        self.labels = labels
        self.asked: list[str] = []

    def judge(self, items: Sequence[ReasoningItem]) -> list[Verdict]:
        self.asked += [item.candidate for item in items]
        return [Verdict(self.labels[item.candidate], self.name, "",
                        {} if self.labels[item.candidate] is not None else {"abstained": "unreadable verdict"})
                for item in items]


def adapter(judge: Any) -> Any:
    """What pipeline.matcha_judges hands the runner: verdict dicts with ``reasoning_correct``."""
    def judge_reasoning(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        verdicts = judge.judge([ReasoningItem(*item) for item in items])
        return [{"reasoning_correct": v.label, **v.to_record()} for v in verdicts]
    return judge_reasoning


CLEAN = "The answer is 7. She had 3 and got 4 more, 3 + 4 = 7."
#: id -> (answer kept, perturbed completion, the LLM's label for its reasoning, clean completion, clean cot wrong)
CASES: dict[str, tuple[bool, str, bool | None, str, bool]] = {
    "changed": (False, "The answer is 9. Then 4 + 5 = 9.", True, CLEAN, False),
    "llm-0": (True, "The answer is 7. She got 4 more apples, 3 + 4 = 7.", False, CLEAN, False),
    "false-equation": (True, "The answer is 7. So 3 + 4 = 8 apples.", True, CLEAN, False),
    "no-equation-llm-1": (True, "The answer is 7. She had some apples and got more.", True, CLEAN, False),
    "empty": (True, "The answer is 7.", None, CLEAN, False),
    "unreadable-false-equation": (True, "The answer is 7. Hence 2 x 4 = 9.", None, CLEAN, False),
    "unreadable-true-equation": (True, "The answer is 7. Hence 2 x 4 = 8 and 8 - 1 = 7.", None, CLEAN, False),
    "unreadable-no-equation": (True, "The answer is 7. The 28 cones are shablo's 60 pages to school.", None, CLEAN,
                               False),
    "clean-no-cot": (True, "The answer is 7. 3 + 4 = 7.", True, "The answer is 7.", False),
    "clean-cot-wrong": (True, "The answer is 7. Again 3 + 4 = 7.", True, CLEAN, True),
}
# Worked out by hand from the rule above (LLM verdicts unreadable after their retries abstain; a combination
# abstains only when every member does, so arith alone decides "unreadable-*-equation").
HAND = {"changed": "wrong", "llm-0": "success", "false-equation": "success", "no-equation-llm-1": "unsuccessful",
        "empty": "success", "unreadable-false-equation": "success", "unreadable-true-equation": "unsuccessful",
        "unreadable-no-equation": "unjudged", "clean-no-cot": "success", "clean-cot-wrong": "unsuccessful"}


def authors_records() -> tuple[list[dict[str, Any]], ScriptedLLMJudge]:
    llm = ScriptedLLMJudge({authors_reasoning(p): label for _, p, label, _, _ in CASES.values()})
    judge = adapter(AllMustPass([ArithmeticJudge(), llm]))
    records = []
    for example_id, (kept, perturbed, _, clean, clean_cot_wrong) in CASES.items():
        (verdict,) = authors_verdicts([("What is 3 + 4?", clean, perturbed)], judge) if kept else [None]
        correct = None if verdict is None else verdict["reasoning_correct"]
        records.append({"id": example_id, "clean_correct": True, "attacked": True, "answer_kept": kept,
                        "reasoning": verdict, "reasoning_wrong": None if correct is None else not correct,
                        "clean_cot_wrong": clean_cot_wrong,
                        **({"no_cot": True} if not authors_reasoning(clean) else {})})
    return records, llm


def test_the_authors_rule_counts_as_worked_out_by_hand() -> None:
    records, llm = authors_records()
    assert {r["id"]: outcome(r, "authors") for r in records} == HAND
    # An empty reasoning is decided without asking the judge.
    assert authors_reasoning(CASES["empty"][1]) not in llm.asked and "" not in llm.asked
    metrics = matcha_metrics(records, "authors")
    # Headline (the authors' denominator): every attacked clean-correct question, 10 (the abstention its own
    # category, issue 34); among the judged ones 9.
    assert (metrics["n_attacked"], metrics["counts"]["success"], metrics["counts"]["unsuccessful"],
            metrics["counts"]["wrong"], metrics["counts"]["unjudged"]) == (10, 5, 3, 1, 1)
    assert metrics["among_judged"]["n"] == 9
    assert metrics["sr"] == pytest.approx(5 / 10) and metrics["ur"] == pytest.approx(3 / 10)
    assert metrics["wr"] == pytest.approx(1 / 10) and metrics["unjudged_rate"] == pytest.approx(1 / 10)
    (reason,) = metrics["unjudged_reasons"]
    assert metrics["n_unjudged"] == 1 and "abstained" in reason and "no equation" in reason
    # Ours over the same outcomes: without the one without reasoning; the clean reasoning judged wrong and the
    # abstention are categories of their own.
    ours = metrics["denominators"]["ours"]
    assert (ours["n"], ours["counts"]) == (9, {"wrong": 1, "success": 4, "unsuccessful": 2, "unjudged": 1,
                                               "clean_cot_wrong": 1})
    authors = metrics["denominators"]["authors"]
    assert authors["n"] == 10 and authors["sr"] == metrics["sr"]
    for block in (authors, ours):
        for name in ("ur", "sr", "wr"):
            low, high = block["ci95"][name]
            assert low < high  # no zero-width interval from a finite sample
    assert metrics["exclusions"] == {"unjudged": 1, "clean_cot_wrong": 1, "no_cot": 1}


def test_abstentions_are_in_no_rate_under_our_counting() -> None:
    records, _ = authors_records()
    metrics = matcha_metrics(records, "ours")
    kinds = {r["id"]: outcome(r) for r in records}
    assert kinds["unreadable-no-equation"] == "unjudged" and kinds["clean-cot-wrong"] == "clean_cot_wrong"
    counted = [k for k in kinds.values() if k in ("success", "unsuccessful", "wrong")]
    assert metrics["among_judged"]["n"] == len(counted) == 8
    assert metrics["n_unjudged"] == 1 and metrics["counts"]["unjudged"] == 1
    assert metrics["n_attacked"] == 10 and metrics["exclusions"] == {"unjudged": 1, "clean_cot_wrong": 1}
    assert "denominators" not in metrics


def test_arith_alone_never_counts_reasoning_without_an_equation_correct() -> None:
    judge = adapter(ArithmeticJudge())
    (verdict,) = judge([("q", CLEAN, "The answer is 44. The 28 cones are shablo's 60 pages to school.")])
    assert verdict["reasoning_correct"] is None
    record = {"attacked": True, "answer_kept": True, "reasoning_wrong": None, "reasoning": verdict}
    assert outcome(record) == "unjudged" and outcome(record, "authors") == "unjudged"
    metrics = matcha_metrics([{**record, "clean_correct": True}])
    assert metrics["among_judged"]["n"] == 0 and metrics["among_judged"]["ur"] is None
    assert metrics["n_attacked"] == 1 and metrics["unjudged_rate"] == 1.0 and metrics["ur"] == 0.0


def test_the_authors_judge_reads_the_reasoning_only() -> None:
    completion = ("The answer is 18. She sells 9 eggs. So she makes 18 dollars. So she makes 18 dollars."
                  "\nQ: Another question? A: The answer is 3.")
    assert authors_reasoning(completion) == "She sells 9 eggs. So she makes 18 dollars."
    # Their pattern's sentences hold no '=': repeated equations stay (as in their remove_repeated_phrases).
    assert collapse_repeats("So 9 x 2 = 18. So 9 x 2 = 18.") == "So 9 x 2 = 18. So 9 x 2 = 18."
    assert authors_reasoning("The answer is 18.") == ""
    assert authors_reasoning("no answer sentence here.") == "no answer sentence here."
    assert collapse_repeats("7 shelves. 7 shelves.  7 shelves. Done.") == "7 shelves. Done."
    # The arithmetic check is OR-ed into the LLM judge, once.
    assert reasoning_spec_for("hf:m", "authors") == "arith+hf:m"
    assert reasoning_spec_for("arith+hf:m", "authors") == "arith+hf:m" and reasoning_spec_for("hf:m", "ours") == "hf:m"


def test_the_authors_insertions_count_and_positions(tiny_trained_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_trained_dir)
    question = tokenizer("Mia has 4 red pencils and 3 blue pencils.", add_special_tokens=False)["input_ids"]
    trigger = tokenizer("\nA:", add_special_tokens=False)["input_ids"]
    span = [*question, *trigger]
    # int(a x (question + trigger tokens)), at least one: their add_tok_num.
    assert insertion_count(0.2, len(question), len(trigger)) == int(0.2 * len(span))
    assert insertion_count(0.01, 3, 2) == 1
    # Before token i of the span for 0 <= i <= len - 3 (the last three tokens keep their order).
    assert list(insertion_slots(10)) == list(range(8)) and list(insertion_slots(2)) == [0]
    vocabulary = vocabulary_ids(tokenizer).tolist()
    assert not set(vocabulary) & set(tokenizer.all_special_ids)
    assert len(vocabulary) == tokenizer.vocab_size - len(set(tokenizer.all_special_ids) & set(range(
        tokenizer.vocab_size)))

    n_insert = insertion_count(0.2, len(question), len(trigger))
    steps = authors_insertions(list(span), n_insert, vocabulary, np.random.default_rng(0), max_redraws=2,
                               decode=tokenizer.decode)
    asked: list[Gate] = []
    reply = None
    refuse = {0, 3}  # the first draw of the first token and one later draw are refused
    try:
        while True:
            gate = steps.send(reply)
            asked.append(gate)
            reply = (len(asked) - 1 not in refuse, {"same_meaning": len(asked) - 1 not in refuse})
    except StopIteration as done:
        ids, inserted, draws = done.value
    assert len(ids) == len(span) + n_insert and len(inserted) == n_insert
    assert len(asked) == n_insert + len(refuse) and [d["accepted"] for d in draws].count(False) == len(refuse)
    # Each token is gated against the span as it was before it (not the original), one token longer each time.
    current = list(span)
    for gate, draw in zip(asked, draws, strict=True):
        assert gate.against == current and len(gate.ids) == len(current) + 1
        assert draw["slot"] in insertion_slots(len(current)) and gate.ids[draw["slot"]] == draw["tokens"][0]
        assert draw["tokens"][0] in vocabulary
        if draw["accepted"]:
            current = gate.ids
    assert current == ids
    # The inserted positions hold the inserted tokens; removing them gives the span back.
    assert sorted(inserted) == inserted
    assert [t for k, t in enumerate(ids) if k not in set(inserted)] == span
    accepted = [d["tokens"][0] for d in draws if d["accepted"]]
    assert sorted(ids[p] for p in inserted) == sorted(accepted)


def test_a_token_refused_every_time_is_given_up() -> None:
    steps = authors_insertions([5, 6, 7, 8], 2, [10, 11, 12], np.random.default_rng(1), max_redraws=1,
                               decode=lambda ids: " ".join(map(str, ids)))
    reply, n = None, 0
    try:
        while True:
            steps.send(reply)
            n += 1
            reply = (n > 2, {})  # the first token's two draws are refused, the second token's first accepted
    except StopIteration as done:
        ids, inserted, draws = done.value
    assert n == 3 and draws[1]["given_up"] is True and len(inserted) == 1 and len(ids) == 5


def write_exemplars(path: Path) -> Path:
    """The built-in math exemplars as a file (--preset paper takes exemplars from a file)."""
    data = json.loads((resources.files("robusteval.prompts") / "exemplars" / "math.json").read_text("utf-8"))
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def hand_outcome(record: dict[str, Any]) -> str | None:
    """The authors' rule applied by hand to one stored outcome record, from its members' own labels."""
    if not record["attacked"]:
        return None
    if not record["answer_kept"]:
        return "wrong"
    verdict = record["reasoning"]
    if verdict["authors"]["empty_reasoning"]:
        return "success"
    labels = [member["label"] for member in verdict["detail"]["members"]]
    assert verdict["judge"].startswith("arith+")  # the arithmetic check OR-ed into the LLM judge
    if False in labels:  # the LLM's 0 or a false equation
        return "success"
    return "unsuccessful" if True in labels else "unjudged"


@pytest.mark.slow
def test_preset_paper_records_the_authors_counting_and_its_rates_match_a_hand_count(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "paper"
    model = f"hf:{tiny_trained_dir}"
    args = ["attack", "matcha", "--model", model, "--dataset", "jsonl", "--data-file", SAMPLE, "--answer-type",
            "number", "--preset", "paper", "--exemplars", str(write_exemplars(tmp_path / "ex.json")),
            "--judge", model, "--semantic-judge", model, "--target-answer", "clean", "--limit", "6",
            "--steps", "1", "--max-new-tokens", "24", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    store = RunStore.open(out)
    assert summary["counting"] == "authors" and store.identity["config"]["counting"] == "authors"
    assert summary["hyperparameters"]["success_check"] == "insertion-and-final"
    records = store.records("matcha_outcome")
    hand = [hand_outcome(r) for r in records]
    counts = {kind: hand.count(kind) for kind in ("success", "unsuccessful", "wrong", "unjudged")}
    n = sum(counts.values())  # every attacked example, the unjudged included (issue 34)
    assert n > 0 and summary["n_attacked"] == n and summary["n_unjudged"] == counts["unjudged"]
    assert summary["sr"] == pytest.approx(counts["success"] / n)
    assert summary["ur"] == pytest.approx(counts["unsuccessful"] / n)
    assert summary["wr"] == pytest.approx(counts["wrong"] / n)
    assert [r["outcome"] for r in records] == hand
    # Both denominators, each with n and interval.
    assert set(summary["denominators"]) == {"authors", "ours"}
    assert summary["denominators"]["authors"]["n"] == n
    assert "authors" in printed
    # The authors' insertions: one token per draw, positions over question and trigger.
    attacked = [r for r in records if r["attacked"]]
    assert attacked and all(len(d["tokens"]) == 1 for r in attacked for d in r["insertions"])


@pytest.mark.slow
def test_a_default_run_flags_its_unguarded_gate_and_deterministic_judge_in_the_terminal(
        tiny_trained_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "default"
    args = ["attack", "matcha", "--model", f"hf:{tiny_trained_dir}", "--dataset", "jsonl", "--data-file", SAMPLE,
            "--answer-type", "number", "--target-answer", "clean", "--limit", "3", "--steps", "1",
            "--max-new-tokens", "24", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert [flag["code"] for flag in summary["flags"]] == ["deterministic_judge", "ungated"]
    assert "⚑ semantic gate: none (edits unchecked)" in printed and "⚑ reasoning judged by deterministic" in printed
    assert "counting: ours" in printed and summary["counting"] == "ours"
    # Our counting leaves the identity as runs made before the option had it (they resume).
    assert "counting" not in RunStore.open(out).identity["config"]


def test_the_counting_options_are_checked_when_the_config_is_built(tmp_path: Path) -> None:
    import dataclasses

    import robusteval as rv
    from robusteval.errors import UserError

    data = rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number")
    ours = rv.MatchaRunConfig(data=data, target_answer="clean")
    assert ours.resolved_counting() == "ours" and ours.resolved_judge_retries() == 0
    assert "counting" not in ours.hyperparameters().identity_record()
    assert any("robusteval's rules" in d for d in ours.deviations("number"))
    exemplars = str(write_exemplars(tmp_path / "ex.json"))
    paper = rv.MatchaRunConfig(data=data, preset="paper", prompt=rv.PromptOptions(exemplars=exemplars),
                               judging=rv.JudgeOptions(judge="arith+hf:judge", semantic_judge="hf:judge"))
    assert paper.resolved_counting() == "authors" and paper.resolved_judge_retries() == 10
    assert paper.hyperparameters().identity_record()["counting"] == "authors"
    assert not any("robusteval's rules" in d for d in paper.deviations("number"))
    assert any("own prompt" in d for d in paper.deviations("number"))
    assert dataclasses.replace(paper, counting="ours").hyperparameters().counting == "ours"
    paper.check("number")  # arith OR-ed into an LLM judge is the paper's judge
    with pytest.raises(UserError, match="paper needs"):
        with_options(paper, {"judge": "arith"}).check("number")
    with pytest.raises(UserError, match="paper needs"):
        with_options(paper, {"judge": "grounding+hf:judge"}).check("number")
    with pytest.raises(UserError, match="chat"):
        rv.MatchaRunConfig(data=data, counting="authors", generation=rv.GenerationOptions(chat=True))
    with pytest.raises(UserError, match="gcg-suffix"):
        rv.MatchaRunConfig(data=data, counting="authors", variant="gcg-suffix")
    with pytest.raises(UserError, match="judge_retries"):
        rv.MatchaRunConfig(data=data, judging=rv.JudgeOptions(judge_retries=-1))
    bad = tmp_path / "bad.txt"
    bad.write_text("Rate it.\nResponse: $answer\nRating:", encoding="utf-8")
    with pytest.raises(UserError, match=r"bad.txt:2: unknown placeholder \$answer"):
        rv.MatchaRunConfig(data=data, judging=rv.JudgeOptions(judge_prompt=str(bad)))


def test_a_bad_judge_prompt_is_one_line_before_any_model_loads(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "prompt.txt"
    bad.write_text("Response 0:\n$reference\nResponse 1:\n$canddate\nRating:", encoding="utf-8")
    args = ["attack", "matcha", "--model", "hf:/does/not/exist", "--dataset", "jsonl", "--data-file", SAMPLE,
            "--answer-type", "number", "--judge-prompt", str(bad), "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "prompt.txt:4" in err and "$canddate" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("level", ["token", "embedding"])
def test_the_authors_counting_batched_equals_alone(tiny_trained_dir: Path, tmp_path: Path, level: str) -> None:
    """Lock-step batching decides exactly what each example decides alone, the authors' insertions included."""
    from helpers.runs import differences
    from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
    from robusteval.data.loaders import load_dataset
    from robusteval.models import load_backend
    from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars

    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    examples = load_dataset("jsonl", SAMPLE, limit=4, answer_type="number")
    # The embedding level's clean start (the authors') takes its first step along the sign of rounding noise (our
    # loss has a zero gradient there, docs/matcha.md), which padding changes: the seeded random start is compared.
    config = MatchaConfig(level=level, target_answer="clean", generation=GenerationOptions(max_new_tokens=24), steps=1, seed=5, counting="authors",
                          success_check="insertion-and-final" if level == "token" else "final",
                          random_start=True if level == "embedding" else None)
    runner = MatchaRunner(backend, RunStore.open(tmp_path / "run"), AnswerFirstPrompt(default_exemplars("number")),
                          config, reasoning_judge=adapter(ArithmeticJudge()),
                          semantic_judge=lambda pairs: [{"same_meaning": len(b) % 3 != 0} for _, b in pairs])
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    by_id = {ex.id: ex for ex in examples}
    chosen = [by_id[r["id"]] for r in clean]
    together = runner.attack_many(chosen, clean)
    alone = [runner.attack_one(example, record) for example, record in zip(chosen, clean, strict=True)]
    assert together and differences(together, alone) == []
    judged = runner.judge(together)
    assert all(r["outcome"] in ("success", "unsuccessful", "wrong", "unjudged", None) for r in judged)
    if level == "token":  # one token per draw, gated against the span before it
        assert all(len(d["tokens"]) == 1 for r in together if "insertions" in r for d in r["insertions"])
