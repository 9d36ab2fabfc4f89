"""A model asked a yes/no question whose answer is one digit: the machinery both LLM judges share.

Reading the verdict (only ever from the judge model's own output, never from the prompt):

* backends with the ``logprobs`` capability: the prompt is scored with the two continuations ``" 1"`` and
  ``" 0"`` (teacher-forced, no sampling; all items of one ``judge`` call in one
  :func:`~robusteval.models.base.score_requests` call, which the hf backend runs in batched forwards); the label
  is whichever is more likely, and ``raw`` keeps both log-probabilities as JSON. Equal (or non-finite) scores
  abstain ("log-probs tied or not finite"); the path is deterministic, so nothing is re-asked.
* other backends (APIs): greedy generation of at most ``max_new_tokens`` (default 3) tokens; the label is read
  from the first number in the output, which must be exactly ``0`` or ``1`` (``"1"``, ``" 1."``, ``"**0**"``
  and ``"Rating: 1"`` parse; ``"10"``, ``"0.5"`` and ``"Correct"`` do not). An unreadable output is asked
  again up to ``retries`` times (``--judge-retries``; default 0), each re-ask sampled at ``retry_temperature``
  (default 0.7; MATCHA's ``--count authors`` re-asks at 0, the same prompt, as the authors' judge does) with its
  own seed (1, 2, 3, ... by round), the unreadable items of a round in one batch; every attempt's text is kept
  in ``detail["attempts"]``. Still unreadable after ``retries + 1`` asks: the judge abstains ("unreadable verdict
  after K asks"), or with ``unreadable="authors-fallback"`` says "correct" (``detail["fallback"]`` says so, the
  reason in ``detail["unreadable"]``), as the MATCHA authors' local fallback reads every verdict.

Prompts are ``string.Template`` texts (:mod:`robusteval.judges.prompt_files`): the built-in ones in
``judges/prompts/`` (``prompt_name``: ``reasoning``, ``reasoning_pair``, ``semantic``) or the user's own
(``prompt_text``, from ``--judge-prompt FILE``). ``$name`` placeholders, one pass, no ``eval`` or
``str.format``, so braces or dollar signs in model text are inert. The instructions before the first
placeholder are sent as the ``prefix`` argument of ``continuation_logprobs`` when the backend takes one (the hf
backend then encodes them once per run); otherwise the full prompt is scored.

Chat (``chat=True``, ``--judge-chat``): the full prompt is one user turn (:meth:`BinaryLLMJudge.messages`), rendered
by the judge model's chat template (hf) or sent to ``/chat/completions`` (APIs); the log-prob path scores ``"1"``
and ``"0"`` as the start of the assistant's reply. Unset (None), as before: API judges that generate use the chat
endpoint with the prompt as one user message, log-prob judges score the raw prompt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict
from string import Template
from typing import Any

from robusteval.errors import UserError
from robusteval.judges.base import Verdict, check_items
from robusteval.judges.prompt_files import PLACEHOLDERS, check_template, load_judge_prompt, load_prompt
from robusteval.models.base import (
    Backend,
    Generation,
    GenerationRequest,
    Message,
    ScoreRequest,
    can_score,
    declared_capabilities,
    score_requests,
)
from robusteval.text.thinking import (
    NO_THINKING,
    THINKING_TRUNCATED,
    ReasoningOptions,
    Split,
    chat_prompt_opens,
    closing_prefix,
    split_output,
    written_format,
)

__all__ = ["PLACEHOLDERS", "BinaryLLMJudge", "load_judge_prompt", "load_prompt", "parse_binary"]

CHAT_YES, CHAT_NO = "1", "0"  # in a chat they start the assistant's reply: no separating space
YES, NO = " " + CHAT_YES, " " + CHAT_NO  # continuations scored after the raw prompt's cue
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
#: Re-asks of an unreadable generated verdict: sampled at this temperature, round r with seed r.
RETRY_TEMPERATURE = 0.7
#: What a verdict still unreadable after its re-asks becomes: an abstention, or (MATCHA --count authors, by choice)
#: "correct", as the authors' local fallback reads it.
UNREADABLE = ("abstain", "authors-fallback")
AUTHORS_FALLBACK = "read as correct, as the MATCHA authors' local fallback reads every verdict ('Rating: 1')"
#: Tokens a thinking judge may spend on its trace before its verdict (a real R1 trace runs to thousands).
THINKING_BUDGET = 2048
LOGPROBS_TIED = "log-probs tied or not finite"


def parse_binary(text: str) -> bool | None:
    """The first number in ``text`` read as a verdict: ``1`` -> True, ``0`` -> False, anything else -> None."""
    match = _NUMBER_RE.search(text)
    if match is None or match.group(0) not in ("0", "1"):
        return None
    return match.group(0) == "1"


class BinaryLLMJudge:
    """A judge that renders ``template`` with an item's fields and reads a 1/0 answer from ``backend``.

    ``retries``: re-asks of an unreadable generated answer (the log-prob path never re-asks). ``prompt_name``:
    a built-in prompt instead of the class's own (``"reasoning_pair"``). ``prompt_text``: the user's template
    instead of any built-in one (checked like a ``--judge-prompt`` file), ``prompt_label`` naming it in the
    identity (default ``"custom"``; its sha256 is there too, so another text is another cache key).
    """

    task: str
    prompt_name: str
    deterministic = False
    #: What the log-prob path scores after every item's prompt, read by :meth:`_logprob_verdict`.
    choices: tuple[str, ...] = (CHAT_YES, CHAT_NO)

    def __init__(self, backend: Backend, *, max_new_tokens: int = 3, chat: bool | None = None, retries: int = 0,
                 prompt_text: str | None = None, prompt_label: str | None = None, prompt_name: str | None = None,
                 thinking_budget: int | None = None, retry_temperature: float = RETRY_TEMPERATURE,
                 unreadable: str = "abstain"):
        if retries < 0:
            raise UserError(f"judge retries: {retries} is negative; give 0 (ask once) or more")
        if unreadable not in UNREADABLE:
            raise UserError(f"judge unreadable verdicts: {unreadable!r}; choose {' or '.join(UNREADABLE)}")
        if not math.isfinite(retry_temperature) or retry_temperature < 0:
            raise UserError(f"judge retry temperature: {retry_temperature} is not a temperature (0 or more)")
        self.retry_temperature = float(retry_temperature)
        self.unreadable = unreadable
        self.backend = backend
        self.max_new_tokens = max_new_tokens
        # A reasoning model judges after its trace: read from its chat template (none for every other model).
        self.reasoning = ReasoningOptions().resolve(backend) if chat is True else NO_THINKING
        # The trace's budget: a thinking template's judge always gets one; a judge whose thinking cannot be read
        # off a template (an API) only when it is given (--judge-max-thinking-tokens).
        self.thinking_budget = THINKING_BUDGET if thinking_budget is None else int(thinking_budget)
        self._budgeted = self.reasoning.thinks or thinking_budget is not None
        self._opens: bool | None = None
        self.retries = int(retries)
        # True: the prompt as a chat conversation on every backend (hf renders its chat template). None: the
        # generate path asks API judges through their chat endpoint (instruction-tuned), the log-prob path scores
        # the raw prompt. False: raw text everywhere.
        self.uses_chat_template = chat is True
        self.chat = chat is not False
        if prompt_name is not None:
            self.prompt_name = prompt_name
        if prompt_text is None:
            self.template_text = load_prompt(self.prompt_name)
            self.prompt_label = self.prompt_name
            check_template(self.template_text, self.task, f"built-in judge prompt '{self.prompt_name}'")
        else:
            self.template_text = prompt_text
            self.prompt_label = prompt_label or "custom"
            check_template(prompt_text, self.task, self.prompt_label)
        self._template = Template(self.template_text)
        # The constant instructions before the first placeholder: sent as a cacheable prefix ("$$" read as "$").
        first = min((m.start() for m in Template.pattern.finditer(self.template_text)
                     if m.group("named") or m.group("braced")), default=len(self.template_text))
        self._head = Template(self.template_text[:first]).substitute({})
        self._body = Template(self.template_text[first:])
        self.uses_logprobs = can_score(backend)
        # What the backend declares it scores in (a cached prefix, a chat conversation), never read from signatures.
        in_context = declared_capabilities(backend).scores_in_context
        self._scores_with_prefix = self.uses_logprobs and in_context
        if self.uses_chat_template and self.uses_logprobs and not in_context:
            raise UserError(f"judge chat: {backend.name} cannot score a chat conversation; judge without the chat "
                            "template")
        if self.uses_logprobs and self.reasoning.kind == "harmony":
            raise UserError(f"judge {backend.name}: its replies come after harmony's analysis channel, which the "
                            "log-prob path cannot close; judge it through an API that generates (openai:...)")
        self.name = f"llm:{backend.name}"

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task": self.task,
            "backend": self.backend.name,
            "prompt": self.prompt_label,
            "prompt_sha256": hashlib.sha256(self.template_text.encode("utf-8")).hexdigest()[:16],
            "method": "logprobs" if self.uses_logprobs else "generate",
            "max_new_tokens": None if self.uses_logprobs else self.max_new_tokens,
            # None on the raw log-prob path, as verdicts cached before chat judges existed were keyed.
            "chat": (True if self.uses_chat_template else None) if self.uses_logprobs else self.chat,
            # Only where re-asks happen (the generate path) and only when asked for: keys cached before
            # re-asks existed stay valid.
            **({"retries": self.retries} if self.retries and not self.uses_logprobs else {}),
            **({"retry_temperature": self.retry_temperature}
               if self.retries and not self.uses_logprobs and self.retry_temperature != RETRY_TEMPERATURE else {}),
            # Only when a verdict may be read where there is none (every other key stays as it was).
            **({"unreadable": self.unreadable} if self.unreadable != "abstain" else {}),
            # A thinking judge only (every other judge's keys stay as they were).
            **({"thinking": self.reasoning.record(),
                **({} if self.uses_logprobs else {"thinking_budget": self.thinking_budget})}
               if self.reasoning.thinks else
               {"thinking_budget": self.thinking_budget} if self._budgeted and not self.uses_logprobs else {}),
        }

    def render(self, item: Any) -> tuple[str, str]:
        """(prefix, prompt) for ``item``; ``prefix + prompt`` is the full judge prompt."""
        fields = {k: str(v).strip() for k, v in asdict(item).items()}
        # The prompt ends at its cue ("Rating:"), no trailing whitespace, so " 1"/" 0" continue it naturally.
        return self._head, self._body.substitute(fields).rstrip()

    def full_prompt(self, item: Any) -> str:
        prefix, prompt = self.render(item)
        return prefix + prompt

    def messages(self, item: Any) -> list[Message]:
        """The chat form of the judge prompt: the full prompt (instructions, item, cue) as one user turn."""
        return [{"role": "user", "content": self.full_prompt(item)}]

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        check_items(self.task, items)
        if not items:
            return []
        if self.uses_logprobs:
            return [self._logprob_verdict(scores) for scores in self._score(items, self.choices)]
        return self._judge_generate(items)

    @property
    def _prompt_opens(self) -> bool:
        """Whether the template's generation prompt opens the trace itself (R1-distill): the same for every item;
        asked where the judge runs (a Ray worker), not when it is built."""
        if self._opens is None:
            self._opens = chat_prompt_opens(self.backend, self.reasoning)
        return self._opens

    def _score_request(self, item: Any, continuations: Sequence[str]) -> ScoreRequest:
        """What to score for ``item``: in a chat, ``continuations`` as the start of the assistant's reply
        (``"1"``); otherwise after a space that continues the prompt's cue (``" 1"``), the instructions sent as
        the cacheable ``prefix`` where the backend takes one, else the whole prompt (the two-argument form)."""
        if self.uses_chat_template:
            messages = tuple(self.messages(item))
            # A thinking model's verdict comes after its trace: the trace is closed empty before the scored
            # answer (the comparison of "1" and "0" is unchanged by the shared prefix).
            closed = closing_prefix(self.reasoning, self._prompt_opens)
            return ScoreRequest("", tuple(closed + c for c in continuations), messages=messages)
        prefix, prompt = self.render(item)
        spaced = tuple(" " + c for c in continuations)
        if self._scores_with_prefix:
            return ScoreRequest(prompt, spaced, prefix)
        return ScoreRequest(prefix + prompt, spaced)

    def _score(self, items: Sequence[Any], continuations: Sequence[str]) -> list[list[float]]:
        """Log-probabilities of each continuation after every item's prompt, all items in one backend call."""
        return score_requests(self.backend, [self._score_request(item, continuations) for item in items])

    def _logprob_verdict(self, scores: Sequence[float]) -> Verdict:
        lp_yes, lp_no = scores
        raw = json.dumps({"1": lp_yes, "0": lp_no})
        detail: dict[str, Any] = {"method": "logprobs", "logprob_1": lp_yes, "logprob_0": lp_no}
        if not (math.isfinite(lp_yes) and math.isfinite(lp_no)) or lp_yes == lp_no:
            return self._no_verdict(raw, LOGPROBS_TIED, detail)
        return Verdict(lp_yes > lp_no, self.name, raw, detail)

    def _requests(self, items: Sequence[Any]) -> list[GenerationRequest]:
        """The first ask of every item: greedy. The full prompt goes in ``prompt`` (no prefix): API backends
        send only that field."""
        # A thinking model writes its trace first: the budget covers it (thinking_budget), then the verdict.
        budget = self.max_new_tokens + (self.thinking_budget if self._budgeted else 0)
        return [
            GenerationRequest(max_new_tokens=budget, temperature=0.0, chat=True,
                              messages=tuple(self.messages(item)))
            if self.uses_chat_template else
            GenerationRequest(self.full_prompt(item), max_new_tokens=budget, temperature=0.0, chat=self.chat)
            for item in items
        ]

    def _reply(self, out: Generation) -> tuple[str, Split]:
        """The text the verdict is read from: the reply after a thinking model's trace (an API's trace returned
        apart, or the think tags of its template), else the whole output."""
        # A server that writes the think tags into ``content`` (no reasoning parser): the verdict after the trace.
        split = split_output(out.text, out.meta, written_format(out.text, self.reasoning), opened=self._prompt_opens)
        return split.reply, split

    def _readable(self, out: Generation) -> bool:
        """Whether a generated answer can be read (else it is asked again while re-asks are left)."""
        return parse_binary(self._reply(out)[0]) is not None

    def _ask(self, items: Sequence[Any]) -> list[list[Generation]]:
        """Every item's answers, in order: the greedy first ask, then for the items still unreadable up to
        ``retries`` re-asks, round r sampled at ``retry_temperature`` with seed r, one batch per round."""
        first = self._requests(items)
        attempts = [[out] for out in self.backend.generate(first)]
        for round_ in range(1, self.retries + 1):
            todo = [i for i, outs in enumerate(attempts) if not self._readable(outs[-1])]
            if not todo:
                break
            again = [dataclasses.replace(first[i], temperature=self.retry_temperature, seed=round_) for i in todo]
            for i, out in zip(todo, self.backend.generate(again), strict=True):
                attempts[i].append(out)
        return attempts

    def _judge_generate(self, items: Sequence[Any]) -> list[Verdict]:
        return [self._generated_verdict(outs) for outs in self._ask(items)]

    def _generated_verdict(self, attempts: Sequence[Generation]) -> Verdict:
        """The verdict read from an item's answers (the last is the readable one, if any)."""
        last = attempts[-1]
        reply, split = self._reply(last)
        label = parse_binary(reply)
        detail: dict[str, Any] = {"method": "generate", "finish_reason": last.finish_reason,
                                  "unparsed": label is None, "attempts": [out.text for out in attempts]}
        if split.thinking is not None:  # the verdict was read from the reply; the trace is kept beside it
            detail.update({"thinking": split.thinking, "reply": reply})
        if split.truncated:
            return self._no_verdict(last.text, f"{THINKING_TRUNCATED} after {self.thinking_budget} thinking tokens",
                                    detail)
        if label is None:
            return self._no_verdict(last.text, unreadable(len(attempts)), detail)
        return Verdict(label, self.name, last.text, detail)

    def _no_verdict(self, raw: str, reason: str, detail: dict[str, Any]) -> Verdict:
        """No verdict could be read (``reason``): an abstention, or with ``unreadable="authors-fallback"`` the
        "correct" the MATCHA authors' local fallback always reads (labelled in ``detail``)."""
        if self.unreadable == "authors-fallback":
            return Verdict(True, self.name, raw, {**detail, "unreadable": reason, "fallback": AUTHORS_FALLBACK})
        return Verdict.abstain(self.name, raw, reason, detail)


def unreadable(asks: int) -> str:
    """The abstention reason of an answer still unreadable after ``asks`` asks."""
    return f"unreadable verdict after {asks} ask" + ("s" if asks != 1 else "")
