"""``robusteval judges audit``: how well a reasoning judge (or a combination) agrees with labelled chains of thought.

A labelled set is JSON Lines, one item per line (format in ``docs/judges.md``): ``question``,
``reference_cot`` (a correct solution), ``perturbed_cot`` (the chain to judge), ``label`` (``correct`` or
``incorrect``) and ``category`` (for incorrect items one of the four error types; for correct items, optionally,
what kind of harmless change it is: paraphrase, unit change, ...), plus optional ``id``, ``answer`` and ``note``.
With ``answer``, both chains reach the judge answer-first ("The answer is 30. <chain>"), as MATCHA's do.

:func:`audit_judge` asks the judge about every item and measures (:mod:`robusteval.metrics.agreement`):
agreement (accuracy), Cohen's kappa and precision/recall/F1 of "incorrect"; per error category the recall
(share of the category's incorrect items flagged) and the precision of the items the judge path typed with that
category (:func:`~robusteval.judges.errortypes.classify_errors` on every flagged item); the error-type
accuracy and confusion matrix over flagged incorrect items; the false alarms per kind of correct item; and the
items where the judge disagrees with the label. An abstention (``arith`` with no equation to check, an LLM
verdict still unreadable after its re-asks) is neither agreement nor disagreement: it is counted apart
(``n_abstained``, with the reasons in ``abstain_reasons`` and the items in ``abstentions``), and agreement,
kappa, the per-category figures and the false alarms are computed over the judged items only (``n_judged``,
the denominator, is ``agreement["n"]``). ``n_unparsed`` is the old name of ``n_abstained``, kept for readers of
earlier summaries.

With ``error_classifier`` the LLM classifier names the types no checker can, and is also scored on its own on
every incorrect item (``classifier``). With ``out``, the audit is a run directory like any other
(:func:`robusteval.lifecycle.open_run`): model verdicts are cached there, so a re-run asks no model again, and
``summary.json`` holds the result.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from robusteval.errors import DataError, UserError
from robusteval.judges.audit_config import AuditConfig
from robusteval.judges.base import REASONING, Judge, ReasoningItem, Verdict, build_judge, with_cache
from robusteval.judges.errortypes import CATEGORIES, ERROR_TYPES, build_error_classifier, classify_errors
from robusteval.lifecycle import public_entry
from robusteval.metrics.agreement import agreement, category_table, confusion_matrix, ratio
from robusteval.models.base import Backend

COMMAND = "judges audit"
LABELS = ("correct", "incorrect")
_TEXT_FIELDS = ("question", "reference_cot", "perturbed_cot")


@dataclass(frozen=True)
class LabelledItem:
    """One labelled chain of thought (see the module docstring); ``line`` is its 1-based line in the file."""

    id: str
    question: str
    reference_cot: str
    perturbed_cot: str
    label: str
    category: str | None
    answer: str | None = None
    note: str | None = None
    line: int = 0

    @property
    def incorrect(self) -> bool:
        return self.label == "incorrect"

    def reasoning_item(self) -> ReasoningItem:
        """The judge's item: the chains answer-first when the answer is known (MATCHA's responses are)."""
        head = f"The answer is {self.answer.strip()}. " if self.answer else ""
        return ReasoningItem(self.question, head + self.reference_cot, head + self.perturbed_cot)


def load_labelled(path: str | os.PathLike[str]) -> list[LabelledItem]:
    """Read and check a labelled set; any problem is a one-line error naming the file, line and field."""
    from robusteval.data.loaders import iter_jsonl

    file = Path(path)
    items: list[LabelledItem] = []
    seen: dict[str, int] = {}
    for line, record in iter_jsonl(file):
        def text(key: str, *, required: bool = True, line: int = line, record: dict[str, Any] = record) -> str | None:
            value = record.get(key)
            if value is None and not required:
                return None
            if key not in record:
                raise DataError(file, "required field is missing", line=line, field=key)
            if isinstance(value, int | float) and not isinstance(value, bool) and key in ("id", "answer"):
                return str(value)
            if not isinstance(value, str) or not value.strip():
                raise DataError(file, "expected a non-empty string", line=line, field=key)
            return value

        fields = {key: text(key) for key in _TEXT_FIELDS}
        label = text("label")
        if label not in LABELS:
            raise DataError(file, f"expected 'correct' or 'incorrect', got {label!r}", line=line, field="label")
        category = text("category", required=label == "incorrect")  # optional for correct items
        if label == "incorrect" and category not in ERROR_TYPES:
            raise DataError(file, f"an incorrect item's category is one of {', '.join(ERROR_TYPES)}; got "
                            f"{category!r}", line=line, field="category")
        item_id = text("id", required=False) or f"line-{line}"
        if item_id in seen:
            raise DataError(file, f"duplicate id {item_id!r} (first on line {seen[item_id]})", line=line, field="id")
        seen[item_id] = line
        items.append(LabelledItem(item_id, str(fields["question"]), str(fields["reference_cot"]),
                                  str(fields["perturbed_cot"]), str(label), category, text("answer", required=False),
                                  text("note", required=False), line))
    return items


def audit_identity(config: AuditConfig, labelled_sha256: str) -> dict[str, Any]:
    from robusteval.lifecycle import run_identity

    extra: dict[str, Any] = {"labelled_sha256": labelled_sha256}
    if config.judge_prompt is not None:  # the prompt's content, not its path, changes the verdicts
        extra["judge_prompt_sha256"] = hashlib.sha256(Path(config.judge_prompt).read_bytes()).hexdigest()
    return run_identity(COMMAND, config, None, **extra)


@public_entry
def audit_judge(config: AuditConfig, *, out: str | os.PathLike[str] | None = None,
                load_model: Callable[[str], Backend] | None = None) -> dict[str, Any]:
    """Audit ``config.judge`` on ``config.labelled`` and return the summary (also ``out/summary.json`` when
    ``out`` is given; model verdicts are then cached there). ``load_model(spec)`` loads judge models (default:
    ``load_backend`` with default options; each spec once)."""
    items = load_labelled(config.labelled)
    digest = hashlib.sha256(Path(config.labelled).read_bytes()).hexdigest()
    loaded: dict[str, Backend] = {}

    def load(spec: str) -> Backend:
        if spec not in loaded:
            if load_model is None:
                from robusteval.models import load_backend

                loaded[spec] = load_backend(spec)
            else:
                loaded[spec] = load_model(spec)
        return loaded[spec]

    chat = True if config.judge_chat else None
    spec = config.judging.reasoning_spec()  # set: the audit requires it

    def build() -> tuple[Judge, Judge | None]:
        judge = build_judge(spec, load, task=REASONING, chat=chat, prompt_file=config.judge_prompt,
                            retries=config.judge_retries or 0, thinking_budget=config.judge_max_thinking_tokens)
        classifier = config.error_classifier
        return judge, (build_error_classifier(classifier, load, chat=chat) if classifier else None)

    head = {"judge_spec": spec, "labelled": str(config.labelled), "labelled_sha256": digest}
    if out is None:
        judge, classifier = build()
        return {**head, **audit_items(judge, items, classifier)}
    from robusteval.lifecycle import finish, open_run

    info = {"labelled": str(Path(config.labelled).resolve())}
    # The judges load inside the lifecycle: a model that cannot load leaves no half-made run directory.
    with open_run(out, audit_identity(config, digest), info=info, load=build) as (store, built):
        judge, classifier = cast(tuple[Judge, Judge | None], built)  # what build() made
        cached = with_cache(classifier, store) if classifier is not None else None
        return finish(store, {**head, **audit_items(with_cache(judge, store), items, cached)})


def audit_items(judge: Judge, items: Sequence[LabelledItem], classifier: Judge | None = None) -> dict[str, Any]:
    """The audit's figures for ``judge`` on ``items`` (keys listed in the module docstring)."""
    if not items:
        raise UserError("judges audit: the labelled set has no items")
    # The classifier types flagged items no checker can, then is scored alone on every incorrect item: the
    # flagged incorrect ones would be asked twice (without --out, no store remembers the first answer).
    classifier = _AskedOnce(classifier) if classifier is not None else None
    questions = [item.reasoning_item() for item in items]
    verdicts = judge.judge(questions)
    flagged = [v.label is False for v in verdicts]
    gold = [item.incorrect for item in items]
    # Abstentions are counted apart: every agreement figure is over the items the judge decided.
    judged = [i for i, v in enumerate(verdicts) if v.label is not None]
    abstained = [i for i, v in enumerate(verdicts) if v.label is None]
    reasons = Counter(str(verdicts[i].abstain_reason) for i in abstained)
    typed = [i for i, f in enumerate(flagged) if f]
    found = classify_errors([questions[i] for i in typed], [verdicts[i] for i in typed], llm_classifier=classifier)
    types: list[str | None] = [None] * len(items)
    for i, error in zip(typed, found, strict=True):
        types[i] = error.category
    incorrect_typed = [i for i in typed if gold[i]]
    per_category = category_table(ERROR_TYPES, [items[i].category for i in judged], [gold[i] for i in judged],
                                  [flagged[i] for i in judged], [types[i] for i in judged])
    for category, row in per_category.items():
        row["n_abstained"] = sum(gold[i] and items[i].category == category for i in abstained)
    summary: dict[str, Any] = {
        "judge": judge.name,
        "n": len(items),
        "n_correct": gold.count(False),
        "n_incorrect": gold.count(True),
        "n_judged": len(judged),
        "n_abstained": len(abstained),
        "n_unparsed": len(abstained),  # the old name of n_abstained
        "abstain_reasons": dict(reasons.most_common()),
        "agreement": agreement([gold[i] for i in judged], [flagged[i] for i in judged]),
        "per_category": per_category,
        "false_alarms": _false_alarms(items, flagged, verdicts),
        "error_types": {
            "n": len(incorrect_typed),
            "accuracy": ratio(sum(types[i] == items[i].category for i in incorrect_typed), len(incorrect_typed)),
            "confusion": confusion_matrix([str(items[i].category) for i in incorrect_typed],
                                          [str(types[i]) for i in incorrect_typed], CATEGORIES),
        },
        "disagreements": [_disagreement(items[i], verdicts[i], types[i]) for i in judged if flagged[i] != gold[i]],
        "abstentions": [{"id": items[i].id, "line": items[i].line, "label": items[i].label,
                         "category": items[i].category, "reason": verdicts[i].abstain_reason} for i in abstained],
    }
    if classifier is not None:
        summary["classifier"] = classifier_accuracy(classifier, items)
    return summary


class _AskedOnce:
    """A judge that remembers its verdicts: an item it is asked about again gets the first answer."""

    def __init__(self, inner: Judge):
        self.inner = inner
        self.name = inner.name
        self.task = inner.task
        self._answers: dict[Any, Verdict] = {}

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        new = list(dict.fromkeys(item for item in items if item not in self._answers))
        if new:
            self._answers.update(zip(new, self.inner.judge(new), strict=True))
        return [self._answers[item] for item in items]


def classifier_accuracy(classifier: Judge, items: Sequence[LabelledItem]) -> dict[str, Any]:
    """The LLM error-type classifier on its own: its category for every incorrect item against the label."""
    wrong = [item for item in items if item.incorrect]
    answers = classifier.judge([item.reasoning_item() for item in wrong])
    predicted = [str((a.detail or {}).get("category") or "unclassified") for a in answers]
    gold = [str(item.category) for item in wrong]
    per_category = {c: {"n": gold.count(c), "correct": sum(g == p == c for g, p in zip(gold, predicted, strict=True))}
                    for c in ERROR_TYPES}
    return {
        "name": classifier.name,
        "n": len(wrong),
        "accuracy": ratio(sum(g == p for g, p in zip(gold, predicted, strict=True)), len(wrong)),
        "n_abstained": sum(a.label is None for a in answers),  # left unclassified: counted as wrong types
        "n_unparsed": predicted.count("unclassified"),
        "per_category": {c: {**v, "recall": ratio(v["correct"], v["n"])} for c, v in per_category.items()},
        "confusion": confusion_matrix(gold, predicted, CATEGORIES),
    }


def _false_alarms(items: Sequence[LabelledItem], flagged: Sequence[bool], verdicts: Sequence[Verdict]
                  ) -> dict[str, dict[str, Any]]:
    """Correct items flagged, per kind of correct item (its ``category``; "other" when it has none); the rate is
    over the judged items (``n``), the abstentions counted apart (``n_abstained``)."""
    out: dict[str, dict[str, Any]] = {}
    for item, flag, verdict in zip(items, flagged, verdicts, strict=True):
        if item.incorrect:
            continue
        row = out.setdefault(item.category or "other", {"n": 0, "flagged": 0, "n_abstained": 0})
        if verdict.label is None:
            row["n_abstained"] += 1
            continue
        row["n"] += 1
        row["flagged"] += flag
    return {kind: {**row, "rate": ratio(row["flagged"], row["n"])} for kind, row in out.items()}


def _disagreement(item: LabelledItem, verdict: Verdict, error_type: str | None) -> dict[str, Any]:
    said = "abstained" if verdict.label is None else "correct" if verdict.label else "incorrect"
    return {"id": item.id, "line": item.line, "label": item.label, "category": item.category, "judge_says": said,
            "error_type": error_type, "why": _why(verdict), "note": item.note}


def _why(verdict: Verdict) -> str:
    """The judge's own reason, shortened: the false equation, the grounding issue, or its raw output."""
    detail = verdict.detail or {}
    for member in detail.get("members") or ():
        if member.get("label") is False:
            return _why(Verdict.from_record(member))
    if detail.get("false_equations"):
        return "false equation: " + "; ".join(e["text"] for e in detail["false_equations"])
    if detail.get("method") == "grounding" and detail.get("reason"):
        return f"{detail['category']}: {detail['reason']}"
    return verdict.raw[:200]
