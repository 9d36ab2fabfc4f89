"""LLM reasoning judge: is the perturbed response's reasoning correct, given the clean reference?

The prompt (``prompts/reasoning.txt``, written for this project) covers the paper's criteria: logical
coherence, departures from the reference that introduce errors, correct calculations, true facts; text about
another question is ignored and extra self-checking steps are not errors. ``prompt_name="reasoning_pair"``
selects the other built-in prompt (also the project's own words), which shows the judge the two responses
only, no question. ``prompt_text`` (``--judge-prompt FILE``) replaces both with the user's template. The judge
model answers with one digit, read from its own output only (see :mod:`robusteval.judges.llm`). Any backend can
judge.
"""

from __future__ import annotations

from robusteval.errors import UserError
from robusteval.judges.base import (
    MODEL,
    MODEL_JUDGE_OPTIONS,
    REASONING,
    SEMANTIC,
    BackendLoader,
    Judge,
    register_judge,
)
from robusteval.judges.llm import RETRY_TEMPERATURE, BinaryLLMJudge


class ReasoningJudge(BinaryLLMJudge):
    """``label`` True = the candidate's reasoning is correct. Items: :class:`~robusteval.judges.base.ReasoningItem`."""

    task = REASONING
    prompt_name = "reasoning"


@register_judge(MODEL, summary="a model spec (hf:PATH, openai:MODEL@URL): an LLM judge with a project-written prompt",
                options=MODEL_JUDGE_OPTIONS)
def _model_judge(task: str, spec: str, load: BackendLoader, *, chat: bool | None = None, retries: int = 0,
                 prompt_text: str | None = None, prompt_label: str | None = None, prompt_name: str | None = None,
                 retry_temperature: float = RETRY_TEMPERATURE, unreadable: str = "abstain",
                 thinking_budget: int | None = None) -> Judge:
    # One factory for both roles: the role decides the prompt, the spec decides the model.
    from robusteval.judges.semantic import SemanticJudge

    judge_type: type[BinaryLLMJudge]
    if task == REASONING:
        judge_type = ReasoningJudge
    elif task == SEMANTIC:
        judge_type = SemanticJudge
    else:
        raise UserError(f"no LLM judge for task {task!r}")
    budget = {} if thinking_budget is None else {"thinking_budget": thinking_budget}
    return judge_type(load(spec), chat=chat, retries=retries, prompt_text=prompt_text, prompt_label=prompt_label,
                      prompt_name=prompt_name, retry_temperature=retry_temperature, unreadable=unreadable, **budget)


@register_judge("embedded", summary="an LLM judge on the shipped Gemma 3 270M (the quick-start's model; needs the "
                "demo extra)", options=MODEL_JUDGE_OPTIONS)
def _embedded_judge(task: str, spec: str, load: BackendLoader, *, chat: bool | None = None, retries: int = 0,
                    prompt_text: str | None = None, prompt_label: str | None = None, prompt_name: str | None = None,
                    retry_temperature: float = RETRY_TEMPERATURE, unreadable: str = "abstain",
                    thinking_budget: int | None = None) -> Judge:
    from robusteval.models.embedded import embedded_model_spec

    return _model_judge(task, embedded_model_spec(), load, chat=chat, retries=retries, prompt_text=prompt_text,
                        prompt_label=prompt_label, prompt_name=prompt_name, retry_temperature=retry_temperature,
                        unreadable=unreadable, thinking_budget=thinking_budget)
