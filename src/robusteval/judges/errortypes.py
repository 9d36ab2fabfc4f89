"""Which kind of mistake a successful attack put into the chain of thought (the MATCHA paper's four types).

:func:`classify_errors` takes the items of successful attacks (answer kept, reasoning judged wrong) and their
reasoning verdicts and gives one :class:`ErrorType` per item, deciding with the first source that can tell:

1. a false equation (from the ``arith`` verdict's ``detail.false_equations``, or the arithmetic checker run
   on the candidate when the deciding judge did not include it) -> ``"wrong calculation"``;
2. a grounding issue (the ``grounding`` verdict's ``detail.category``, or the grounding judge run on the
   item) -> ``"wrong information"`` or ``"irrelevant information"``;
3. an LLM classifier (:class:`ErrorTypeClassifier`, prompt ``prompts/errortype.txt``) asked which of the four
   numbered categories it is: log-probabilities of the four numbers where the backend can score (one length
   each, so no name wins for being short), else a few generated tokens read as a number or a name. Pass it
   through :func:`~robusteval.judges.base.with_cache` so every answer is stored in the run;
4. otherwise ``"unclassified"``.

"Wrong reasoning" (right arithmetic, wrong operation or logic) has no deterministic checker: only the LLM
classifier names it. Items whose verdict does not say "wrong" get ``"unclassified"`` with a reason.

Use from a pipeline::

    classifier = with_cache(build_error_classifier(spec, load), store)  # optional
    types = classify_errors(items, verdicts, llm_classifier=classifier)
    records = [t.to_record() for t in types]  # {"category", "judge", "raw", "detail"}
    summary = error_type_summary(t.category for t in types)  # {"n", "counts", "shares"}
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from robusteval.errors import UserError
from robusteval.judges.base import REASONING, BackendLoader, Judge, ReasoningItem, Verdict
from robusteval.judges.error_categories import (
    CATEGORIES,
    ERROR_TYPES,
    IRRELEVANT_INFORMATION,
    UNCLASSIFIED,
    WRONG_CALCULATION,
    WRONG_INFORMATION,
    WRONG_REASONING,
)
from robusteval.judges.llm import LOGPROBS_TIED, BinaryLLMJudge, unreadable
from robusteval.models.base import Backend, Generation


@dataclass(frozen=True)
class ErrorType:
    """The category of one item's mistake, the judge that decided it, and that judge's own output."""

    category: str  # one of ERROR_TYPES, or UNCLASSIFIED
    judge: str  # "arith", "grounding", "errortype:<model>", or "none"
    raw: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def error_type_summary(categories: Iterable[str]) -> dict[str, Any]:
    """``{"n", "counts", "shares"}`` over the given categories; every category is listed, zeros included."""
    found = list(categories)
    unknown = sorted(set(found) - set(CATEGORIES))
    if unknown:
        raise ValueError(f"unknown error categories: {', '.join(unknown)}")
    counts = {c: found.count(c) for c in CATEGORIES}
    shares = {c: (counts[c] / len(found) if found else None) for c in CATEGORIES}
    return {"n": len(found), "counts": counts, "shares": shares}


def named_error(verdict: Verdict) -> ErrorType | None:
    """The category a deterministic judge named inside ``verdict`` (combinations searched), if any.

    A false equation wins over a grounding issue: a wrong number in a calculation is first of all a wrong
    calculation.
    """
    found: list[ErrorType] = []
    _collect(verdict, found)
    found.sort(key=lambda e: ERROR_TYPES.index(e.category))
    return found[0] if found else None


def _collect(verdict: Verdict, found: list[ErrorType]) -> None:
    detail = verdict.detail or {}
    for member in detail.get("members") or ():
        _collect(Verdict.from_record(member), found)
    if verdict.label is not False:
        return
    if detail.get("method") == "arithmetic" and detail.get("false_equations"):
        found.append(ErrorType(WRONG_CALCULATION, verdict.judge, verdict.raw,
                               {"false_equations": detail["false_equations"]}))
    elif detail.get("method") == "grounding" and detail.get("category") in ERROR_TYPES:
        keep = {k: detail.get(k) for k in ("span", "quantity", "reason", "issues")}
        found.append(ErrorType(detail["category"], verdict.judge, verdict.raw, keep))


def judges_in(verdict: Verdict) -> set[str]:
    """The names of the judges behind ``verdict``: its own and, for a combination, every member's (recursively)."""
    names = {verdict.judge}
    for member in (verdict.detail or {}).get("members") or ():
        names |= judges_in(Verdict.from_record(member))
    return names


def classify_errors(items: Sequence[ReasoningItem], reasoning_verdicts: Sequence[Verdict], *,
                    llm_classifier: Judge | None = None) -> list[ErrorType]:
    """One :class:`ErrorType` per item, in order (sources and their order in the module docstring).

    ``items[i]`` is the judged item (question, reference response, perturbed response) and
    ``reasoning_verdicts[i]`` the reasoning verdict that made the attack a success. ``llm_classifier``: an
    :class:`ErrorTypeClassifier` (ideally ``with_cache``-wrapped); items no checker can tell are sent to it in
    one batch.
    """
    from robusteval.judges.arithmetic import ArithmeticJudge
    from robusteval.judges.grounding import GroundingJudge

    if len(items) != len(reasoning_verdicts):
        raise ValueError(f"{len(items)} items but {len(reasoning_verdicts)} verdicts")
    out: list[ErrorType | None] = []
    for verdict in reasoning_verdicts:
        if verdict.label is None:  # an abstention is not a "wrong": nothing to type
            reason = f"the reasoning judge abstained ({verdict.abstain_reason})"
            out.append(ErrorType(UNCLASSIFIED, "none", "", {"reason": reason}))
        elif verdict.label is not False:
            out.append(ErrorType(UNCLASSIFIED, "none", "", {"reason": "the reasoning was not judged wrong"}))
        else:
            out.append(named_error(verdict))
    # The deciding judge did not say why: ask the checkers it did not include (a checker it included found
    # nothing, and would find nothing again), each once, on all the items still untyped.
    for checker in (ArithmeticJudge(), GroundingJudge()):
        ask = [i for i, (found, verdict) in enumerate(zip(out, reasoning_verdicts, strict=True))
               if found is None and checker.name not in judges_in(verdict)]
        for index, verdict in zip(ask, checker.judge([items[i] for i in ask]) if ask else [], strict=True):
            out[index] = named_error(verdict)
    todo = [i for i, found in enumerate(out) if found is None]
    if todo and llm_classifier is not None:
        answers = llm_classifier.judge([items[i] for i in todo])
        for index, answer in zip(todo, answers, strict=True):
            category = (answer.detail or {}).get("category")
            out[index] = ErrorType(category if category in ERROR_TYPES else UNCLASSIFIED, answer.judge, answer.raw,
                                   dict(answer.detail or {}))
    reason = "no checker could tell and no LLM classifier was given"
    return [e if e is not None else ErrorType(UNCLASSIFIED, "none", "", {"reason": reason}) for e in out]


def attach_error_types(rows: list[dict[str, Any]], item_of: Callable[[dict[str, Any]], ReasoningItem],
                       classifier: Judge | None = None) -> dict[str, Any]:
    """Give every success row (``outcome == "success"``) its ``error_type`` record, the others None, and return
    the distribution ``{"n", "counts", "shares"}``. ``item_of(row)`` is the item the reasoning judge saw."""
    successes = [r for r in rows if r.get("outcome") == "success"]
    verdicts = [Verdict.from_record(r["reasoning"]) for r in successes]
    types = classify_errors([item_of(r) for r in successes], verdicts, llm_classifier=classifier)
    for row in rows:
        row["error_type"] = None
    for row, found in zip(successes, types, strict=True):
        row["error_type"] = found.to_record()
    return error_type_summary(t.category for t in types)


# ----------------------------------------------------------------------------------------------- LLM classifier
_DIGIT_RE = re.compile(r"^\W*([1-4])\b")
#: What the classifier's prompt asks for: the number of a category (``ERROR_TYPES[int(choice) - 1]``).
CHOICES = tuple(str(i) for i, _ in enumerate(ERROR_TYPES, 1))
_KEYWORDS = (("calculat", WRONG_CALCULATION), ("irrelevant", IRRELEVANT_INFORMATION),
             ("reasoning", WRONG_REASONING), ("logic", WRONG_REASONING), ("information", WRONG_INFORMATION))


def parse_category(text: str) -> str | None:
    """The category a generated answer names: the earliest full name, else a telling word, else a digit 1-4."""
    lower = " ".join(text.lower().split())
    hits = [(lower.find(name), name) for name in ERROR_TYPES if name in lower]
    if hits:
        return min(hits)[1]
    for word, category in _KEYWORDS:
        if word in lower:
            return category
    digit = _DIGIT_RE.match(lower)
    return ERROR_TYPES[int(digit.group(1)) - 1] if digit else None


class ErrorTypeClassifier(BinaryLLMJudge):
    """An LLM asked which of the four error types a wrong chain of thought shows (``prompts/errortype.txt``).

    Items are :class:`ReasoningItem`; ``Verdict.detail["category"]`` holds the answer and ``label`` is True
    when a category could be read, None (abstained, with the reason) when not. Prompt rendering, chat handling and caching identity are
    those of :class:`~robusteval.judges.llm.BinaryLLMJudge`.
    """

    task = REASONING
    prompt_name = "errortype"
    # The category numbers, not the names: four continuations of one length, so no category is favoured for
    # having fewer tokens (the sum of a name's token log-probs falls with every token it has).
    choices = CHOICES

    def __init__(self, backend: Backend, *, max_new_tokens: int = 8, chat: bool | None = None, retries: int = 0):
        super().__init__(backend, max_new_tokens=max_new_tokens, chat=chat, retries=retries)
        self.name = f"errortype:{backend.name}"

    def _logprob_verdict(self, scores: Sequence[float]) -> Verdict:
        logprobs = dict(zip(ERROR_TYPES, scores, strict=True))
        best = max(logprobs.values())
        top = [c for c, lp in logprobs.items() if lp == best]
        category = top[0] if len(top) == 1 and math.isfinite(best) else None
        detail = {"method": "logprobs", "category": category, "logprobs": logprobs}
        if category is None:
            return Verdict.abstain(self.name, json.dumps(logprobs), LOGPROBS_TIED, detail)
        return Verdict(True, self.name, json.dumps(logprobs), detail)

    def _readable(self, out: Generation) -> bool:
        return parse_category(self._reply(out)[0]) is not None

    def _generated_verdict(self, attempts: Sequence[Generation]) -> Verdict:
        last = attempts[-1]  # the same requests and re-asks as a judge's; the reply is read as a category
        category = parse_category(self._reply(last)[0])
        detail = {"method": "generate", "category": category, "finish_reason": last.finish_reason,
                  "unparsed": category is None, "attempts": [out.text for out in attempts]}
        if category is None:
            return Verdict.abstain(self.name, last.text, unreadable(len(attempts)), detail)
        return Verdict(True, self.name, last.text, detail)


def check_error_classifier_spec(spec: str | None) -> None:
    """Refuse an ``--error-classifier`` value that names no model (unset is fine), without loading anything.

    Accepted: ``embedded`` or a model spec of a known backend kind (``hf:PATH``, ``openai:MODEL@URL``). Pipelines
    call it before a run directory is made: the value is part of the run identity, so a typo caught later would
    leave a run that the corrected command is refused to resume.
    """
    if not spec:
        return
    spec = spec.strip()
    if spec == "embedded":
        return
    if not re.match(r"[a-z][a-z0-9_-]*:", spec):
        raise UserError(f"'{spec}' is not a model spec; give one (hf:PATH, openai:MODEL@URL, embedded)")
    from robusteval.models.registry import parse_spec

    parse_spec(spec)


def build_error_classifier(spec: str, load: BackendLoader, *, chat: bool | None = None) -> ErrorTypeClassifier:
    """An :class:`ErrorTypeClassifier` on the model ``spec`` (loaded with ``load``; ``embedded`` is the shipped model)."""
    check_error_classifier_spec(spec)
    spec = spec.strip()
    if spec == "embedded":
        from robusteval.models.embedded import embedded_model_spec

        spec = embedded_model_spec()
    return ErrorTypeClassifier(load(spec), chat=chat)
