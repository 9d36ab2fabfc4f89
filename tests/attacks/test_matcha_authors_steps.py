"""``--count authors`` step by step (issue 34 items 2-5, 8, 9): the judge input cut as the authors' ``return_cot``
cuts it, the insertion count and slots from their tokenisation, the replacement gate (theirs or corrected) over like
texts, unreadable verdicts re-asked at temperature 0 then abstained or read as their fallback reads them, the
insertion checkpoint's abstentions, and transfer under the source run's counting.

Every expected cut below is worked out by hand from their code (uiuc-focal-lab/MATCHA, ``utils.py`` L567-572
``get_answer``: "The answer is " and the next space-delimited word; L595-603 ``return_cot``: the text between the
first and second occurrence of that sentence, cut at "Q:", stripped; the whole completion, stripped, when it has no
"The answer is " or not that sentence)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.generate_only import GenerateOnly
from robusteval.attacks.matcha.authors import (
    authors_first_slot,
    authors_verdicts,
    insertion_count,
    insertion_slots,
)
from robusteval.judges import ArithmeticJudge, ReasoningItem
from robusteval.models.generation import GenerationOptions
from robusteval.store import RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def recording_judge(label: bool | None = True) -> tuple[Any, list[tuple[str, str, str]]]:
    """The reasoning judge fn the runner takes, recording what it was asked (the cut is under test)."""
    asked: list[tuple[str, str, str]] = []

    def judge(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        asked.extend(items)
        return [{"reasoning_correct": label, "label": label, "judge": "recording"} for _ in items]
    return judge, asked


# ------------------------------------------------------------------------------------------ item 3: judge input
#: (clean completion, perturbed completion, sentence source or None, their reference cut, their candidate cut)
CUTS = [
    # The reasoning inside the answer sentence: their sentence is "The answer is 18", the rest is the reasoning.
    ("The answer is 18 because 9*2=18.", "The answer is 18 because 2*9=18.", None,
     "because 9*2=18.", "because 2*9=18."),
    # A dollar sign and the period belong to their first word: "The answer is $18." is the sentence.
    ("The answer is $18. She sells 9 eggs at $2.\nQ: Next? A: The answer is 3.",
     "The answer is $18. She sells 9 eggs at $3.", None,
     "She sells 9 eggs at $2.", "She sells 9 eggs at $3."),
    # Lower case: no "The answer is " at all, so the whole completion is read.
    ("The answer is 18. 9 x 2 = 18.", "the answer is 18. 9 x 2 = 18 eggs.", None,
     "9 x 2 = 18.", "the answer is 18. 9 x 2 = 18 eggs."),
    # The clean sentence "The answer is 18." is not in the perturbed completion: read whole.
    ("The answer is 18. 9 x 2 = 18.", "The answer is 18 eggs. 9 x 2 = 18.", None,
     "9 x 2 = 18.", "The answer is 18 eggs. 9 x 2 = 18."),
    # Only up to the second occurrence of the sentence (their split(a)[1]).
    ("The answer is 7. 3 + 4 = 7. The answer is 7. Done.", "The answer is 7. 4 + 3 = 7.", None,
     "3 + 4 = 7.", "4 + 3 = 7."),
    # The final check: the perturbed completion is cut after the insertion checkpoint's sentence (IRD 579-582, 665).
    ("The answer is 18. 9 x 2 = 18.", "The answer is 18 since 9 x 2 = 18.", "The answer is 18 since 2 x 9 = 18.",
     "9 x 2 = 18.", "since 9 x 2 = 18."),
    # Repeated sentences collapsed (their remove_repeated_phrases) after the cut; nothing after it: empty.
    ("The answer is 5. Five apples. Five apples. Five apples.", "The answer is 5.", None, "Five apples.", ""),
]


@pytest.mark.parametrize(("clean", "perturbed", "source", "reference", "candidate"), CUTS)
def test_the_judge_reads_the_reasoning_as_their_return_cot_cuts_it(clean: str, perturbed: str, source: str | None,
                                                                    reference: str, candidate: str) -> None:
    judge, asked = recording_judge()
    (verdict,) = authors_verdicts([("q", clean, perturbed)], judge, [source])
    texts = verdict["authors"]
    assert (texts["reference_reasoning"], texts["candidate_reasoning"]) == (reference, candidate)
    if reference and candidate:
        assert asked == [("q", reference, candidate)]
    else:  # an empty reasoning is wrong without asking (their auto_rater_gpt returns 0)
        assert asked == [] and verdict["reasoning_correct"] is False
    assert texts["candidate_sentence_from"] == ("clean" if source is None else "insertion checkpoint")


def test_the_runner_cuts_the_final_check_after_the_checkpoint_sentence(tiny_trained_dir: Path,
                                                                       tmp_path: Path) -> None:
    """``MatchaRunner.judge`` under --count authors: the clean reasoning after its own sentence, a perturbed one
    decided after the gradient steps after the insertion checkpoint's."""
    judge, asked = recording_judge()
    runner = make_runner(tiny_trained_dir, tmp_path, counting="authors", reasoning_judge=judge)
    record = {"id": "x", "clean_question": "How many?", "clean_completion": "The answer is 18. 9 x 2 = 18.",
              "perturbed_completion": "The answer is 18 since 9 x 2 = 18.", "answer_kept": True,
              "checkpoint_judged_text": "The answer is 18 since 2 x 9 = 18.", "gold_reasoning": None}
    (judged,) = runner.judge([record])
    assert ("How many?", "9 x 2 = 18.", "since 9 x 2 = 18.") in asked
    assert judged["reasoning"]["authors"]["candidate_sentence"] == "The answer is 18"


# ------------------------------------------------------------------------------------------ runner fixtures
def make_runner(tiny_trained_dir: Path, tmp_path: Path, *, reasoning_judge: Any = None, semantic_judge: Any = None,
                **config: Any) -> Any:
    from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
    from robusteval.models import load_backend
    from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars

    backend = load_backend(f"hf:{tiny_trained_dir}", device="cpu")
    settings = {"target_answer": "clean", "generation": GenerationOptions(max_new_tokens=24), "steps": 1, "seed": 3, **config}
    arith = ArithmeticJudge()

    def arith_judge(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        return [{"reasoning_correct": v.label, **v.to_record()} for v in arith.judge([ReasoningItem(*i) for i in items])]
    return MatchaRunner(backend, RunStore.open(tmp_path / "run"), AnswerFirstPrompt(default_exemplars("number")),
                        MatchaConfig(**settings), reasoning_judge=reasoning_judge or arith_judge,
                        semantic_judge=semantic_judge or (lambda pairs: [{"same_meaning": True} for _ in pairs]))


def attackable(runner: Any, limit: int = 4) -> tuple[list[Any], list[dict[str, Any]]]:
    from robusteval.data.loaders import load_dataset

    examples = load_dataset("jsonl", SAMPLE, limit=limit, answer_type="number")
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    by_id = {ex.id: ex for ex in examples}
    return [by_id[r["id"]] for r in clean], clean


# ------------------------------------------------------------------------------------------ item 4: insertions
def test_the_insertion_count_and_slots_come_from_their_tokenisation(tiny_trained_dir: Path, tmp_path: Path) -> None:
    runner = make_runner(tiny_trained_dir, tmp_path, counting="authors", insert_ratio=1.0, steps=0)
    tokenizer = runner.backend.tokenizer
    bos = list(runner.backend.bos_ids)
    examples, clean = attackable(runner)
    assert examples
    for example, record in zip(examples, clean, strict=True):
        prefix = runner.prompt.prefix
        # Their n (IRD 399-401, 495-497): len(tok(prefix + "Q: " + q + "\nA:")) - len(tok(prefix + "Q: ")).
        whole = bos + tokenizer(prefix + "Q: " + example.question.strip() + "\nA:", add_special_tokens=False)["input_ids"]
        context = bos + tokenizer(prefix + "Q: ", add_special_tokens=False)["input_ids"]
        their_n = len(whole) - len(context)
        # Their slots (IRD 513-514): before full-prompt token cur_idx for len(context) <= cur_idx <= len(whole) - 3;
        # the span (question + trigger) starts where the question starts in the whole prompt.
        start = len(record["head_ids"]) + record["prefix_length"]
        span = len(whole) - start
        assert span == len(record["question_ids"]) + len(record["tail_ids"])
        first = len(context) - start
        assert first == 1  # "Q: " alone ends in a space token the whole prompt merges into the first question word
        layout = runner.edited_layout(runner.layout(example.question))
        assert authors_first_slot(runner.backend, runner.prompt, layout) == first
        assert insertion_count(1.0, len(record["question_ids"]), len(record["tail_ids"]), first) == their_n
        assert list(insertion_slots(span, first)) == [c - start for c in range(len(context), len(whole) - 2)]
        # The attack inserts their n tokens (a = 1), never before the first question token.
        attacked = runner.attack_one(example, record)
        accepted = [d for d in attacked["insertions"] if d["accepted"]]
        assert len(accepted) == their_n == span - 1
        assert min(d["slot"] for d in attacked["insertions"]) >= 1


# ------------------------------------------------------------------------------------------ item 5: the gate
@pytest.mark.parametrize("gate", ["authors", "corrected"])
def test_the_authors_replacement_gate_compares_like_texts(tiny_trained_dir: Path, tmp_path: Path, gate: str) -> None:
    def semantic(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"same_meaning": True, "asked": [a, b]} for a, b in pairs]

    runner = make_runner(tiny_trained_dir, tmp_path, counting="authors", replacement_gate=gate, topk_ratio=1.0,
                         replacement_positions="corrected",  # their gather reads past the tiny model's vocabulary
                         semantic_judge=semantic)
    examples, clean = attackable(runner)
    decode = runner.backend.decode
    proposals = 0
    for example, record in zip(examples, clean, strict=True):
        attacked = runner.attack_one(example, record)
        for draw in attacked["insertions"]:  # each token against the span before it, both less their last 2 tokens
            before, after = draw["semantic"]["asked"]
            assert not before.endswith("A:") and not after.endswith("A:")
        ids = list(attacked["perturbed_question_ids"])
        step = attacked["steps"][0]
        for p in reversed(step["proposals"]):  # the span as the step found it
            if p["accepted"]:
                ids[p["position"]] = p["old"]
        start = decode(ids[:-2]).strip()
        current = list(ids)
        for p in step["proposals"]:
            proposals += 1
            before, after = p["semantic"]["asked"]
            candidate = list(current)
            candidate[p["position"]] = p["new"]
            if gate == "authors":  # their gate: the span before the step, twice (it never sees the replacement)
                assert before == after == start
            else:
                assert before == start and after == decode(candidate[:-2]).strip() and after != before
            if p["accepted"]:
                current = candidate
    assert proposals > 0


def test_the_gate_choice_is_recorded_and_refused_outside_the_authors_counting(tmp_path: Path) -> None:
    import robusteval as rv
    from robusteval.errors import UserError

    data = rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number")
    authors = rv.MatchaRunConfig(data=data, counting="authors")
    assert authors.hyperparameters().identity_record()["replacement_gate"] == "authors"
    assert any("identical strings" in d for d in authors.deviations("number"))
    corrected = rv.MatchaRunConfig(data=data, counting="authors", replacement_gate="corrected")
    assert corrected.hyperparameters().identity_record()["replacement_gate"] == "corrected"
    assert "replacement_gate" not in rv.MatchaRunConfig(data=data).hyperparameters().identity_record()
    with pytest.raises(UserError, match="replacement_gate"):
        rv.MatchaRunConfig(data=data, replacement_gate="authors")
    with pytest.raises(UserError, match="unreadable_verdicts"):
        rv.MatchaRunConfig(data=data, judging=rv.JudgeOptions(unreadable_verdicts="authors-fallback"))


# ------------------------------------------------------------------------------------------ item 8: checkpoint
def test_an_abstaining_checkpoint_verdict_is_no_success(tiny_trained_dir: Path, tmp_path: Path) -> None:
    """At the insertion checkpoint an abstention decides nothing: the attack goes on (run.py's check)."""
    judge, asked = recording_judge(label=None)
    runner = make_runner(tiny_trained_dir, tmp_path, success_check="insertion-and-final", reasoning_judge=judge)
    examples, clean = attackable(runner)
    records = runner.attack_many(examples, clean)
    assert asked  # the checkpoint asked the judge about kept answers
    kept_at_checkpoint = [r for r in records if r["decided_at"] == "final"]
    assert kept_at_checkpoint  # those went on to the gradient steps
    for record in records:
        if record["decided_at"] == "insertion":
            assert record["steps"][0]["checkpoint"] == "wrong"


# ------------------------------------------------------------------------------------------ item 2: unreadable
@pytest.mark.parametrize("unreadable", ["abstain", "authors-fallback"])
def test_an_unreadable_judge_is_re_asked_at_temperature_0_then_counted_as_chosen(
        tiny_backend: Any, tmp_path: Path, unreadable: str) -> None:
    """The judge --count authors builds (pipeline.matcha_judges with the config's resolved values) on the real tiny
    model behind a generate-only window: it never writes a lone 0 or 1, so every ask is unreadable."""
    import robusteval as rv
    from robusteval.attacks.matcha.pipeline import matcha_judges

    data = rv.DataSpec("jsonl", SAMPLE, limit=4, answer_type="number")
    config = rv.MatchaRunConfig(data=data, counting="authors",
                                judging=rv.JudgeOptions(judge="hf:judge", unreadable_verdicts=unreadable))
    window = GenerateOnly(tiny_backend)
    judge, _, _ = matcha_judges(RunStore.open(tmp_path / "run"), config.judge, "none", lambda spec: window,
                                counting="authors", retries=config.resolved_judge_retries(),
                                retry_temperature=config.resolved_retry_temperature(),
                                unreadable=config.resolved_unreadable())
    (verdict,) = judge([("q", "9 x 2 = 18.", "So she makes 18 dollars.")])
    retries = config.resolved_judge_retries()
    assert retries == 10 and len(window.batches) == retries + 1
    prompts = {r.prompt for batch in window.batches for r in batch}
    assert len(prompts) == 1  # the same prompt every time, as theirs
    assert all(r.temperature == 0.0 for batch in window.batches for r in batch)
    (llm,) = [m for m in verdict["detail"]["members"] if m["judge"].startswith("llm:")]
    assert len(llm["detail"]["attempts"]) == retries + 1
    if unreadable == "abstain":
        assert llm["label"] is None and verdict["reasoning_correct"] is None  # arith abstains too: no equation
    else:  # their local fallback's "Rating: 1", labelled
        assert llm["label"] is True and "fallback" in llm["detail"] and verdict["reasoning_correct"] is True
        assert "unreadable verdict after 11 asks" in llm["detail"]["unreadable"]
    label = "counted apart" if unreadable == "abstain" else "read as 'correct'"
    assert any(label in d and "10 re-asks at temperature 0" in d for d in config.deviations("number"))
    assert rv.MatchaRunConfig(data=data).resolved_retry_temperature() is None  # ours: as before (0.7)


# ------------------------------------------------------------------------------------------ item 9: transfer
class Answers7:
    """The real tiny model behind a window that opens every reply with "The answer is 7. " (so both questions are
    answered correctly and the judge is asked; the judge input is under test, not the model)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities

    def generate(self, requests: Any) -> Any:
        from dataclasses import replace

        return [replace(out, text="The answer is 7. " + out.text) for out in self.inner.generate(requests)]


@pytest.mark.parametrize("counting", ["ours", "authors"])
def test_transfer_judges_as_its_source_run_counted(tiny_backend: Any, tmp_path: Path, counting: str) -> None:
    from robusteval.attacks.matcha.authors import authors_reasoning
    from robusteval.attacks.matcha.transfer import SourceRun, TransferItem, TransferRunner
    from robusteval.prompts.answer_first import default_exemplars

    config = {"level": "token", "max_new_tokens": 12, **({"counting": "authors"} if counting == "authors" else {})}
    source = SourceRun(tmp_path, {"config": config, "judge": "hf:judge"}, default_exemplars("number"), "math",
                       "number", [TransferItem("a", "Tom has 3 apples and gets 4. How many?",
                                               "Tom has 3 apples and gets 4 ok. How many?", "7", {})], 1, 1)
    assert source.counting == counting
    assert source.judge_retries == (10 if counting == "authors" else 0)
    assert source.retry_temperature == (0.0 if counting == "authors" else None)
    judge, asked = recording_judge()
    runner = TransferRunner(Answers7(tiny_backend), RunStore.open(tmp_path / "out"), source, reasoning_judge=judge,
                            max_new_tokens=12)
    (row,) = runner.outcomes()
    assert row["original_correct"] and row["answer_kept"] and len(asked) == 1
    (_, reference, candidate) = asked[0]
    if counting == "authors":  # the reasoning after the original completion's answer sentence, as in the attack
        assert reference == authors_reasoning(row["original_completion"])
        assert candidate == authors_reasoning(row["perturbed_completion"], row["original_completion"])
        assert not reference.startswith("The answer is") and row["reasoning"]["authors"]
    else:
        assert (reference, candidate) == (row["original_completion"], row["perturbed_completion"])
