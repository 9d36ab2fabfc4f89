"""Answer-first accuracy: the clean pass that every MATCHA attack starts from, and the ``evaluate`` pipeline
behind ``robusteval eval``."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from robusteval.data.answers.completion import grade_completion
from robusteval.data.example import Example
from robusteval.evals.answer_first.config import EvalConfig
from robusteval.lifecycle import public_entry
from robusteval.metrics.stats import proportion
from robusteval.models import Backend, GenerationRequest
from robusteval.models.context import PROMPT_TOO_LONG, context_overflow, request_tokens
from robusteval.models.identity import backend_identity, backend_key
from robusteval.models.thinking import generate_thinking
from robusteval.prompts.answer_first import AnswerFirstPrompt, exemplars_for
from robusteval.runner import run_units
from robusteval.store import RunStore, unit_key
from robusteval.store.stages import register_stage
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningFormat,
    ReasoningOptions,
    no_reply_summary,
    opens_thinking,
    read_reply,
    summary_format,
    truncation_summary,
)

#: The command its runs record in their identity.
COMMAND = "eval"
STAGE = register_stage("answer_first", summary="answer-first generations, graded")


def answer_first_records(
    backend: Backend,
    store: RunStore,
    examples: Sequence[Example],
    prompt: AnswerFirstPrompt,
    *,
    max_new_tokens: int = 256,
    batch_size: int = 8,
    description: str = "answer-first",
    chat: bool = False,
    system_prompt: str | None = None,
    math_grader: str = "builtin",
    reasoning: ReasoningFormat = NO_THINKING,
    options: ReasoningOptions | None = None,
) -> list[dict[str, Any]]:
    """Greedy answer-first completions for every example, stored per example (resumable).

    ``chat``: ask through the model's chat template (:meth:`AnswerFirstPrompt.messages`, with ``system_prompt``).
    ``math_grader``: who grades number and math answers (part of the run identity of the callers that offer it,
    so stored verdicts never mix graders). An example whose prompt and ``max_new_tokens`` exceed the model's
    context is not asked: its record says ``skipped`` (:data:`~robusteval.models.context.PROMPT_TOO_LONG`), with
    one line naming it, and :func:`accuracy_summary` leaves it out of the denominator. ``reasoning``: how the
    model's generations hold a thinking trace (:mod:`robusteval.text.thinking`); the answer is read from the reply
    only, a trace never closed is a wrong answer counted as ``thinking_truncated``, and records keep both parts.
    """
    prefix = prompt.prefix
    options = options or ReasoningOptions()

    def request(example: Example) -> GenerationRequest:
        return prompt.request(example.question, max_new_tokens=max_new_tokens, chat=chat, system_prompt=system_prompt)

    def key_of(example: Example) -> str:
        if chat:  # the whole conversation (system prompt, exemplar turns, question) keys the answer
            return unit_key(STAGE, backend_key(backend), example.id, request(example).key())
        # Text prompts keep the key they always had, so stored runs stay resumable.
        return unit_key(STAGE, backend_key(backend), example.id, example.question, prefix, max_new_tokens)

    def too_long(example: Example) -> int | None:
        """The prompt's token count when it does not fit the model's context (said once), else None."""
        tokens = request_tokens(backend, request(example))
        # Under budget forcing the trace comes on top of the reply's budget.
        budget = max_new_tokens + (options.max_thinking_tokens or 0)
        if tokens is None or context_overflow(backend, f"example {example.id}", tokens, budget) is None:
            return None
        return tokens

    def compute(batch: list[Example]) -> list[dict[str, Any]]:
        lengths = {ex.id: too_long(ex) for ex in batch}
        asked = [ex for ex in batch if lengths[ex.id] is None]
        requests = [request(ex) for ex in asked]
        opened = [opens_thinking(backend, r.messages, reasoning) for r in requests]
        generated = generate_thinking(backend, requests, reasoning, options, opened) if asked else []
        outputs = dict(zip([ex.id for ex in asked], generated, strict=True))
        opens = dict(zip([ex.id for ex in asked], opened, strict=True))
        records = []
        for ex in batch:
            record: dict[str, Any] = {"id": ex.id, "question": ex.question, "gold": ex.answer,
                                      "answer_type": ex.answer_type}
            out = outputs.get(ex.id)
            if out is None:
                record.update({"completion": "", "finish_reason": "skipped", "n_tokens": 0, "predicted": None,
                               "correct": False, "skipped": PROMPT_TOO_LONG, "prompt_tokens": lengths[ex.id]})
            else:
                split, kept = read_reply(out.text, out.meta, out.finish_reason, reasoning, opened=opens[ex.id])
                record.update({"completion": out.text, "finish_reason": out.finish_reason, "n_tokens": out.n_tokens,
                               **grade_completion(ex, split.reply, math_grader=math_grader), **kept})
                if "no_answer" in kept:  # no reply to read: wrong, and said why (never graded on a fragment)
                    record.update({"predicted": None, "correct": False})
            records.append(record)
        return records

    return run_units(
        store, STAGE, examples, key_of, compute, id_of=lambda ex: ex.id, batch_size=batch_size, description=description
    )


def accuracy_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy over the answered records; skipped ones (a prompt longer than the model's context) are counted by
    reason in ``skip_reasons``, outside the denominator."""
    answered = [r for r in records if not r.get("skipped")]
    n_correct = sum(1 for r in answered if r["correct"])
    acc = proportion(n_correct, len(answered))
    skipped = Counter(str(r["skipped"]) for r in records if r.get("skipped"))
    # A thinking model: how often its trace ran out of budget; any model: how often its reply was empty (those
    # answers are wrong, never graded, and counted with their interval).
    return {"n": len(answered), "n_correct": n_correct, "acc": acc["value"], "acc_ci95": acc["ci95"],
            "skip_reasons": dict(skipped.most_common()), **truncation_summary(answered),
            **no_reply_summary(answered)}


# ------------------------------------------------------------------------------------------------ pipeline
class EvalSummary(TypedDict):
    model: str
    dataset: str
    data_file: str | None
    exemplars: str
    math_grader: str
    n: int
    n_correct: int
    acc: float | None
    acc_ci95: list[float] | None
    skip_reasons: dict[str, int]  # examples not asked, by reason (a prompt longer than the model's context)
    # A thinking model's run also says how its traces were read and how many the budget cut (text.thinking).
    reasoning_format: NotRequired[dict[str, Any]]
    thinking_truncated: NotRequired[dict[str, Any]]
    thinking_forced: NotRequired[dict[str, Any]]
    no_reply: NotRequired[dict[str, Any]]  # empty replies (wrong, counted apart): count, share, interval, reasons


def eval_identity(config: EvalConfig, model: dict[str, Any] | None, examples: Sequence[Example]) -> dict[str, Any]:
    """The run identity, decided before the model loads: ``--reasoning``/``--think-tags`` when set; ``auto``
    resolves from the model's chat template, which the model identity fixes (the summary says what it found)."""
    from robusteval.lifecycle import run_identity

    prompt = exemplars_for(config.exemplars, examples[0].answer_type)
    return run_identity("eval", config, model, exemplars=prompt.exemplars.name,
                        prefix_hash=unit_key(prompt.prefix))


def _preflight(arguments: Mapping[str, Any]) -> None:
    config: EvalConfig = arguments["config"]
    eval_identity(config, None, config.data.load())  # the data and its exemplars


@public_entry(preflight=_preflight)
def evaluate(config: EvalConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
             batch_size: int = 8) -> EvalSummary:
    """Answer-first accuracy of ``backend`` on ``config.data``; every answer is a stored, resumable unit.

    ``store`` is an open :class:`RunStore` or a run directory (opened, locked and checked here).
    """
    from robusteval.lifecycle import finish, store_for

    examples = config.data.load()
    prompt = exemplars_for(config.exemplars, examples[0].answer_type)
    reasoning = config.thinking.resolve(backend)
    identity = eval_identity(config, backend_identity(backend), examples)
    with store_for(store, identity, {"limit": config.data.limit, "batch_size": batch_size}) as run:
        records = answer_first_records(backend, run, examples, prompt, max_new_tokens=config.generation.budget(),
                                       batch_size=batch_size, chat=config.chat, system_prompt=config.system_prompt,
                                       math_grader=config.math_grader, reasoning=reasoning, options=config.thinking)
        summary = {
            **summary_format(reasoning, records),
            "model": backend.name,
            "dataset": config.data.dataset,
            "data_file": config.data.data_file,
            "exemplars": prompt.exemplars.name,
            "math_grader": config.math_grader,
            **accuracy_summary(records),
        }
        return finish(run, summary, seeds={"seed": config.seed}, shape=EvalSummary)
