"""MATCHA on a thinking target (issue 27, deliverable 5): the answer is read from the reply, never the trace; the
reasoning attacked and judged is ``--reasoning-source``; a trace never closed is counted and never graded; token and
embedding levels run end to end on the tiny thinking models; a target without thinking keeps its identity."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

from robusteval.attacks.matcha.thinking import continuation_spans, judged_text, prompt_opens
from robusteval.cli.main import main
from robusteval.data.answers import extract_answer_first
from robusteval.models.generation import GenerationOptions
from robusteval.store import SUMMARY_NAME, RunStore
from robusteval.text.thinking import THINKING_TRUNCATED, ReasoningFormat, Split

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")
TAGS = ReasoningFormat("think-tags")


def matcha(
    model: Path, out: Path, *extra: str, level: str = "token", limit: int = 4
) -> tuple[dict[str, Any], RunStore]:
    args = [
        "attack",
        "matcha",
        "--model",
        f"hf:{model}",
        "--dataset",
        "jsonl",
        "--data-file",
        SAMPLE,
        "--answer-type",
        "number",
        "--level",
        level,
        "--target-answer",
        "clean",
        "--judge",
        "arith",
        "--semantic-judge",
        "none",
        "--limit",
        str(limit),
        "--steps",
        "2",
        "--out",
        str(out),
        *extra,
    ]
    assert main(args) == 0
    return json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8")), RunStore.open(out)


def test_the_spans_of_a_closed_trace(tiny_thinking_dir: Path) -> None:
    """Where the trace's text, the reply and its answer sentence lie in the continuation's tokens, for a trace the
    model opened and one the prompt opened (R1-distill)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_thinking_dir)

    def decode(ids: list[int]) -> str:
        return str(tokenizer.decode(ids))

    for text, opened in (
        (" <think> The answer is 5. </think> The answer is 7. So 3 + 4 = 7.", False),
        ("The answer is 5.\n</think>\n\nThe answer is 7. So 3 + 4 = 7.", True),
    ):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        spans = continuation_spans(decode, ids, TAGS, opened, "The answer is 7.")
        start, end = spans.trace
        assert decode(ids[start:end]).strip() == "The answer is 5."
        assert (
            decode(ids[spans.reply_start : spans.reply_start + spans.n_answer]).strip() == "The answer is 7."
        )
        assert decode(ids[spans.reply_start + spans.n_answer :]).strip() == "So 3 + 4 = 7."
        # The sources' CoT positions: the chain after the answer, the trace's text, or both (never the tags).
        chain, trace = spans.cot_spans("chain"), spans.cot_spans("trace")
        assert chain == [(spans.reply_start + spans.n_answer, len(ids))] and trace == [(start, end)]
        assert spans.cot_spans("both") == trace + chain
        assert "think>" not in decode([ids[p] for a, b in trace for p in range(a, b)])
    with pytest.raises(ValueError, match="not closed"):
        continuation_spans(
            decode,
            tokenizer(" <think> The answer is", add_special_tokens=False)["input_ids"],
            TAGS,
            False,
            "",
        )
    assert prompt_opens(decode, tokenizer("\n<think>\n", add_special_tokens=False)["input_ids"], TAGS)
    assert not prompt_opens(decode, tokenizer("\nA:", add_special_tokens=False)["input_ids"], TAGS)
    split = Split("The answer is 5.", "The answer is 7. So 3 + 4 = 7.")
    assert judged_text(split, "chain") == split.reply and judged_text(split, "trace") == split.thinking
    assert judged_text(split, "both") == f"{split.thinking}\n\n{split.reply}"


def test_the_loss_reads_a_thinking_targets_answer_after_its_trace() -> None:
    """L_a over the answer's positions after the trace and L_c over the chosen positions; no answer_start and no
    index is the paper's split, exactly."""
    from robusteval.attacks.matcha.loss import matcha_loss, soft_cross_entropy

    generator = torch.Generator().manual_seed(0)
    logits, reference = torch.randn(2, 9, 5, generator=generator), torch.randn(9, 5, generator=generator)
    plain = matcha_loss(logits, reference, 3, 0.5)
    assert torch.equal(
        plain.total, matcha_loss(logits, reference, 3, 0.5, answer_start=0, cot_index=None).total
    )
    cot = torch.tensor([0, 1, 7, 8])
    terms = matcha_loss(logits, reference, 2, 0.25, answer_start=4, cot_index=cot)
    answer = soft_cross_entropy(logits[:, 4:6], reference[4:6])
    chain = soft_cross_entropy(logits[:, cot], reference[cot])
    assert torch.allclose(terms.answer, answer) and torch.allclose(terms.cot, chain)
    assert torch.allclose(terms.total, chain - 0.25 * answer)


def test_token_level_reads_the_reply_never_the_trace(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    """The tiny thinking model states a wrong answer in its trace; every clean and perturbed answer is the reply's,
    so reading the trace would fail here. The judge reads the chain (the default source)."""
    summary, store = matcha(
        tiny_thinking_dir, tmp_path / "token", "--max-new-tokens", "48", "--max-thinking-tokens", "32"
    )
    assert summary["reasoning_format"]["kind"] == "think-tags" and summary["reasoning_source"] == "chain"
    assert summary["max_thinking_tokens"] == 32 and store.identity["config"]["reasoning_source"] == "chain"
    clean = store.records("matcha_clean")
    closed = [r for r in clean if not r["thinking_truncated"] and r["thinking"]]
    assert closed, "the tiny thinking model should close some traces within the budget"
    for row in closed:
        assert row["predicted"] == extract_answer_first(row["reply"], "number")
    planted = [
        r for r in closed if extract_answer_first(r["thinking"], "number") not in (None, r["predicted"])
    ]
    assert planted, "some trace states another answer than its reply"
    attacked = [r for r in store.records("matcha_attack") if not r.get("skipped")]
    assert attacked and summary["n_attacked"] == len(attacked)
    for row in attacked:
        assert row["reasoning_source"] == "chain" and row["clean_judged_text"] == row["clean_reply"]
        if row["perturbed_thinking_truncated"]:  # no reply: no answer, so not kept (never read off the trace)
            assert row["perturbed_answer"] is None and row["answer_kept"] is False
        else:
            assert row["perturbed_answer"] == extract_answer_first(row["perturbed_reply"], "number")
            assert row["perturbed_judged_text"] == row["perturbed_reply"]
    assert summary["perturbed_thinking_truncated"]["n"] == len(attacked)


def test_embedding_level_attacks_and_judges_the_trace(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    summary, store = matcha(
        tiny_thinking_dir,
        tmp_path / "embedding",
        "--max-new-tokens",
        "48",
        "--max-thinking-tokens",
        "32",
        "--reasoning-source",
        "trace",
        level="embedding",
    )
    assert summary["reasoning_source"] == "trace" and store.identity["config"]["reasoning_source"] == "trace"
    attacked = [r for r in store.records("matcha_attack") if not r.get("skipped")]
    assert attacked and all(r["max_abs_delta"] > 0 for r in attacked)
    for row in attacked:
        assert row["clean_judged_text"] == row["clean_thinking"]
        if not row["perturbed_thinking_truncated"]:
            assert row["perturbed_judged_text"] == (row["perturbed_thinking"] or "")
            assert row["perturbed_answer"] == extract_answer_first(row["perturbed_reply"], "number")
    outcomes = {r["id"]: r for r in store.records("matcha_outcome")}
    assert all(outcomes[r["id"]]["attacked"] for r in attacked)


def test_a_trace_never_closed_is_skipped_and_counted(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    summary, store = matcha(
        tiny_thinking_dir, tmp_path / "cut", "--max-new-tokens", "4", "--max-thinking-tokens", "4"
    )
    clean = store.records("matcha_clean")
    assert all(r["thinking_truncated"] and r["predicted"] is None and not r["correct"] for r in clean)
    assert summary["skip_reasons"] == {THINKING_TRUNCATED: 4} and summary["n_attacked"] == 0
    assert summary["thinking_truncated"]["count"] == 4 and summary["thinking_truncated"]["ci95"][0] < 1.0
    assert store.records("matcha_attack") == []


@pytest.fixture(scope="module")
def r1_chat_model(tiny_r1_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny R1-form model, fine-tuned (150 AdamW steps, seeded) on its own chat rendering: after the generation
    prompt's ``<think>`` it writes a trace stating a wrong answer, closes it, then answers first. Returns the model
    and its one-exemplar set (short chat prompts keep the training fast)."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars

    root = tmp_path_factory.mktemp("r1_chat")
    out, exemplar_file = root / "model", root / "one.json"
    shutil.copytree(tiny_r1_dir, out)
    exemplars = json.loads(
        (resources.files("robusteval.prompts") / "exemplars" / "math.json").read_text("utf-8")
    )
    blocks = exemplars["exemplars"]
    exemplar_file.write_text(
        json.dumps({"name": "one", "answer_type": "number", "exemplars": blocks[:1]}), "utf-8"
    )
    prompt = AnswerFirstPrompt(load_exemplars(str(exemplar_file)))
    tokenizer = AutoTokenizer.from_pretrained(out)
    texts = [
        tokenizer.apply_chat_template(
            prompt.messages(b["question"], ""), tokenize=False, add_generation_prompt=True
        )
        + f"The answer is {int(b['answer']) + 1}.\n</think>\n\nThe answer is {b['answer']}. {b['rationale']}"
        + tokenizer.eos_token
        for b in blocks
    ]
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    model = LlamaForCausalLM.from_pretrained(out)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(150):
        batch = [encoded[i] for i in torch.randint(0, len(encoded), (4,), generator=generator).tolist()]
        width = max(len(b) for b in batch)
        ids = torch.tensor([b + [tokenizer.pad_token_id] * (width - len(b)) for b in batch])
        mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in batch])
        loss = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(out)
    return out, exemplar_file


@pytest.mark.parametrize(("level", "source"), [("token", "chain"), ("embedding", "both")])
def test_the_r1_form_is_attacked_through_its_chat_template(
    r1_chat_model: tuple[Path, Path], tmp_path: Path, level: str, source: str
) -> None:
    """DeepSeek-R1-distill's form: the chat prompt opens the trace, so the completion starts inside it; its answer
    (a wrong one, planted) is never read, and the attack runs at both levels on what follows the closing tag."""
    model, exemplars = r1_chat_model
    summary, store = matcha(
        model, tmp_path / level, "--chat", "--system-prompt", "", "--exemplars", str(exemplars),
        "--max-new-tokens", "48", "--max-thinking-tokens", "32", "--reasoning-source", source, level=level,
    )  # fmt: skip
    assert summary["reasoning_source"] == source and summary["n_attacked"] > 0
    closed = [r for r in store.records("matcha_clean") if not r["thinking_truncated"]]
    assert closed
    for row in closed:  # the prompt opened the trace: it starts the completion, no opening tag written
        assert row["trace_span"][0] == 0 and row["completion"].startswith(row["thinking"])
        assert row["predicted"] == extract_answer_first(row["reply"], "number")
        assert extract_answer_first(row["thinking"], "number") != row["predicted"]
    for row in (r for r in store.records("matcha_attack") if not r.get("skipped")):
        if not row["perturbed_thinking_truncated"]:
            assert row["perturbed_answer"] == extract_answer_first(row["perturbed_reply"], "number")
        if source == "both":
            assert row["clean_judged_text"] == f"{row['clean_thinking']}\n\n{row['clean_reply']}"


def test_a_trace_the_prompt_opened_and_never_closed_is_counted(tiny_r1_dir: Path, tmp_path: Path) -> None:
    """The untuned tiny R1-form model never closes the trace its chat prompt opens: each is counted as truncated,
    none graded, none attacked."""
    chat, store = matcha(
        tiny_r1_dir, tmp_path / "chat", "--chat", "--system-prompt", "", "--max-new-tokens", "16",
        "--max-thinking-tokens", "8",
    )  # fmt: skip
    for row in store.records("matcha_clean"):
        assert row["thinking"] == row["completion"].strip() and row["predicted"] is None
    assert chat["thinking_truncated"]["count"] == chat["skip_reasons"][THINKING_TRUNCATED] == 4


def test_a_target_without_thinking_keeps_its_identity(
    tiny_trained_dir: Path, tiny_thinking_dir: Path
) -> None:
    """--reasoning-source is in the run identity only when the target thinks; the raw prompt of a thinking target
    keeps the paper's budget unless one is asked for (the trace default comes with the chat template)."""
    import robusteval as rv
    from robusteval.attacks.matcha.config import MatchaRunConfig
    from robusteval.attacks.matcha.pipeline import matcha_identity
    from robusteval.data.example import Example
    from robusteval.models.identity import describe_model
    from robusteval.text.thinking import DEFAULT_MAX_THINKING_TOKENS

    examples = [Example(id="q", question="What is 3 + 4?", answer="7", answer_type="number")]
    data = rv.DataSpec("jsonl", SAMPLE, answer_type="number")
    plain = describe_model(f"hf:{tiny_trained_dir}")
    base = matcha_identity(MatchaRunConfig(data=data), plain, examples)
    asked = matcha_identity(MatchaRunConfig(data=data, reasoning_source="trace"), plain, examples)
    assert base == asked and "reasoning_source" not in base["config"]
    thinking = describe_model(f"hf:{tiny_thinking_dir}")
    raw = matcha_identity(MatchaRunConfig(data=data), thinking, examples)["config"]
    assert raw["reasoning_source"] == "chain" and "max_thinking_tokens" not in raw
    chat = matcha_identity(MatchaRunConfig(data=data, generation=GenerationOptions(chat=True), reasoning_source="both"), thinking, examples)
    assert chat["config"]["reasoning_source"] == "both"
    assert chat["config"]["max_thinking_tokens"] == DEFAULT_MAX_THINKING_TOKENS


def test_bad_thinking_options_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [
        "attack",
        "matcha",
        "--model",
        "hf:/does/not/exist",
        "--dataset",
        "jsonl",
        "--data-file",
        SAMPLE,
        "--answer-type",
        "number",
        "--out",
        str(tmp_path / "x"),
    ]
    assert main([*base, "--reasoning-source", "chain", "--reasoning", "none"]) == 2
    assert "--reasoning-source" in capsys.readouterr().err
    assert main([*base, "--reasoning", "harmony"]) == 2
    assert "harmony" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--reasoning-source", "thoughts"])


def test_an_unscored_trace_keeps_no_logits(tiny_backend) -> None:  # type: ignore[no-untyped-def]
    """Under --reasoning-source chain the trace is teacher-forced but not scored: the objective keeps logits from
    the answer on only, and its loss is the one computed over every continuation position."""
    from robusteval.attacks.matcha.objective import MatchaObjective, Reference

    generator = torch.Generator().manual_seed(0)
    vocab = tiny_backend.embedding_matrix.shape[0]
    ids = torch.randint(10, vocab, (40,), generator=generator).tolist()
    question, continuation = ids[:8], ids[8:]  # 32 continuation tokens: a 20-token "trace", answer, chain
    chain = Reference(question, continuation, 4, answer_start=20, cot_spans=[(24, 32)])
    full = Reference(question, continuation, 4, answer_start=20, cot_spans=[(0, 0), (24, 32)])
    short, long = (MatchaObjective(tiny_backend, ids[:3], [5], [6], ref) for ref in (chain, full))
    assert (short.m, long.m) == (12, 32) and short.lam == long.lam
    perturbed = torch.randint(10, vocab, (2, 8), generator=generator).tolist()
    for a, b in zip(short.losses(perturbed), long.losses(perturbed), strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_transfer_to_a_thinking_target_reads_its_replies(tiny_thinking_dir: Path, tmp_path: Path) -> None:
    """``transfer``'s target model thinks: each answer is its reply's (the trace plants another one), the
    generation records keep both parts, and the judge is given the replies."""
    from robusteval.attacks.matcha.transfer import SourceRun, TransferItem, TransferRunner
    from robusteval.models import load_backend
    from robusteval.prompts.answer_first import load_exemplars
    from robusteval.text.thinking import ReasoningOptions

    rows = [json.loads(line) for line in Path(SAMPLE).read_text("utf-8").splitlines()[:3]]
    items = [
        TransferItem(str(r["id"]), r["question"], "Well, " + r["question"], str(r["answer"]), {})
        for r in rows
    ]
    source = SourceRun(tmp_path, {"config": {"max_new_tokens": 64}}, load_exemplars("math"), "math", "number", items,
                       len(items), len(items))  # fmt: skip
    backend = load_backend(f"hf:{tiny_thinking_dir}")
    judged: list[tuple[str, str, str]] = []

    def judge(batch: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        judged.extend(batch)
        return [{"reasoning_correct": True} for _ in batch]

    with RunStore.open(tmp_path / "transfer", identity={"command": "transfer-test"}) as store:
        runner = TransferRunner(backend, store, source, reasoning_judge=judge, temperature=0.0,
                                reasoning=ReasoningOptions().resolve(backend))  # fmt: skip
        generated = runner.generations()
        outcomes = runner.outcomes()
    closed = [g for g in generated.values() if g["thinking"] and not g["thinking_truncated"]]
    assert closed
    for record in generated.values():
        assert "thinking" in record and "reply" in record
        expected = None if record["thinking_truncated"] else extract_answer_first(record["reply"], "number")
        assert record["predicted"] == expected
    assert any(extract_answer_first(g["thinking"], "number") not in (None, g["predicted"]) for g in closed)
    replies = {(r["original_reply"], r["perturbed_reply"]) for r in outcomes}
    assert all((reference, candidate) in replies for _, reference, candidate in judged)
