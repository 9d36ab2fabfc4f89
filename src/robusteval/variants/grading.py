"""Variant instances and predictions read from files, and their grading.

Used by the ``score`` and ``evaluate`` pipelines in :mod:`robusteval.variants.pipeline`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.answers import Verdict, extract_final_answer, grade_answer, parse_number
from robusteval.errors import DataError, UserError
from robusteval.metrics.variants import variant_scores


@dataclass(frozen=True)
class VariantInstance:
    id: str
    question: str
    answer: Any  # number or text, as stored in the instances file

    @property
    def gold(self) -> str:
        return gold_text(self.answer)


def gold_text(answer: Any) -> str:
    """Gold answer as text for the grader: 18.0 -> "18", 0.5 -> "0.5", text unchanged."""
    if isinstance(answer, bool):
        return str(int(answer))
    if isinstance(answer, float) and math.isfinite(answer) and answer.is_integer():
        return str(int(answer))
    return str(answer)


# ---------------------------------------------------------------------------------------------------- files
def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    rows = []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON: {exc.msg}", line=lineno) from None
        if not isinstance(record, dict):
            raise DataError(path, "expected a JSON object per line", line=lineno)
        rows.append((lineno, record))
    return rows


def load_instances(path: str | os.PathLike[str]) -> list[VariantInstance]:
    """An instances JSONL (``{"id", "question", "answer"}`` per line; extra fields are ignored)."""
    p = Path(path)
    out: list[VariantInstance] = []
    seen: set[str] = set()
    for lineno, record in _jsonl(p):
        for key in ("id", "question", "answer"):
            if key not in record or record[key] is None:
                raise DataError(p, "missing", line=lineno, field=key)
        iid = str(record["id"])
        if iid in seen:
            raise DataError(p, f"duplicate id {iid!r}", line=lineno, field="id")
        if not isinstance(record["question"], str):
            raise DataError(p, "must be text", line=lineno, field="question")
        seen.add(iid)
        out.append(VariantInstance(iid, record["question"], record["answer"]))
    if not out:
        raise DataError(p, "no instances")
    return out


def load_predictions(path: str | os.PathLike[str], known_ids: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``{"id", "prediction"}`` per line; several lines with one id are several samples.

    Returns the predictions by id and the ids that are not in the instances file (ignored).
    """
    p = Path(path)
    out: dict[str, list[str]] = {}
    unknown: list[str] = []
    for lineno, record in _jsonl(p):
        if "id" not in record:
            raise DataError(p, "missing", line=lineno, field="id")
        if "prediction" not in record:
            raise DataError(p, "missing", line=lineno, field="prediction")
        iid = str(record["id"])
        prediction = record["prediction"]
        if prediction is not None and not isinstance(prediction, str):
            prediction = json.dumps(prediction) if isinstance(prediction, list | dict) else str(prediction)
        if iid not in known_ids:
            unknown.append(iid)
            continue
        out.setdefault(iid, []).append(prediction or "")
    return out, unknown


# ---------------------------------------------------------------------------------------------------- grading
@dataclass(frozen=True)
class GradedAnswer:
    """One prediction graded: the extracted answer and the verdict, which names the grader that decided it
    (its note is "accept-percent" when only the x100 or /100 reading was right)."""

    extracted: str | None
    verdict: Verdict

    @property
    def correct(self) -> bool:
        return self.verdict.correct


def grade_prediction(
    prediction: str,
    gold: str,
    *,
    rel_tol: float = 1e-4,
    timeout: float = 3.0,
    accept_percent: bool = False,
    math_grader: str = "builtin",
) -> GradedAnswer:
    """Extract the final answer (last ``\\boxed{}``, else "the answer is", else last number) and grade it by
    ``math_grader`` (:func:`robusteval.data.answers.grade_answer`; the builtin grader: equal as strings,
    numerically within ``rel_tol`` or symbolically with sympy, bounded by ``timeout`` seconds).

    ``accept_percent`` also accepts the prediction x100 or /100 (VAR-MATH's grader does), when both the
    prediction and the gold answer are plain numbers: "2\\sqrt{2}" is no percentage of 200.
    """
    extracted = extract_final_answer(prediction, "math")
    if extracted is None:
        return GradedAnswer(None, Verdict(False, math_grader, "no answer found"))
    verdict = grade_answer(extracted, gold, "math", grader=math_grader, rel_tol=rel_tol, timeout=timeout)
    if verdict.correct or not accept_percent:
        return GradedAnswer(extracted, verdict)
    p, g = parse_number(extracted), parse_number(gold)
    if p is not None and g is not None:
        for scaled in (p * 100, p / 100):
            if math.isclose(scaled, g, rel_tol=rel_tol, abs_tol=1e-9):
                return GradedAnswer(extracted, Verdict(True, verdict.grader, "accept-percent"))
    return GradedAnswer(extracted, verdict)


def grade(
    prediction: str,
    gold: str,
    *,
    rel_tol: float = 1e-4,
    timeout: float = 3.0,
    accept_percent: bool = False,
    math_grader: str = "builtin",
) -> tuple[str | None, bool]:
    """(extracted answer, correct): :func:`grade_prediction` without the grader detail."""
    graded = grade_prediction(prediction, gold, rel_tol=rel_tol, timeout=timeout, accept_percent=accept_percent,
                              math_grader=math_grader)
    return graded.extracted, graded.correct


def grade_all(
    instances: Sequence[VariantInstance],
    predictions: dict[str, list[str]],
    *,
    rel_tol: float = 1e-4,
    timeout: float = 3.0,
    accept_percent: bool = False,
    math_grader: str = "builtin",
    bootstrap_rounds: int = 1000,
    seed: int = 0,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Grade every prediction; return the score summary and one graded row per prediction (with the grader
    that decided it)."""
    graded: list[dict[str, Any]] = []
    correct: dict[str, list[bool]] = {}
    for inst in instances:
        outcomes: list[bool] = []
        for k, text in enumerate(predictions.get(inst.id, [])):
            answer = grade_prediction(text, inst.gold, rel_tol=rel_tol, timeout=timeout,
                                      accept_percent=accept_percent, math_grader=math_grader)
            outcomes.append(answer.correct)
            graded.append({"id": inst.id, "sample": k, "gold": inst.gold, "extracted": answer.extracted,
                           "correct": answer.correct, **answer.verdict.detail()})
        correct[inst.id] = outcomes
    summary = variant_scores(
        correct, instance_order=[i.id for i in instances], bootstrap_rounds=bootstrap_rounds, seed=seed
    )
    summary["n_predictions"] = len(graded)
    summary["n_missing"] = sum(1 for i in instances if not predictions.get(i.id))
    return summary, graded
