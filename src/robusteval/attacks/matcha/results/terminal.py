"""One attacked example told in full, for the terminal: what the attack changed and what the judge said."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

OUTCOME_WORDS = {
    "success": "SR: answer kept, reasoning judged wrong",
    "unsuccessful": "UR: answer kept, reasoning judged fine",
    "wrong": "WR: the answer changed",
}
MARKS = {"inserted": ("[+", "]"), "replaced": ("[*", "]")}
LEGEND = "[+x] inserted at random, [*x] inserted and then replaced by a gradient step"


def marked_question(text: str, edits: Sequence[dict[str, Any]]) -> str:
    """``text`` with every edit span wrapped in its mark (spans as stored by the token attack)."""
    out, cursor = [], 0
    for edit in sorted(edits, key=lambda e: e["start"]):
        start, end = max(cursor, edit["start"]), max(cursor, edit["end"])
        if end <= start:
            continue
        opening, closing = MARKS.get(edit["kind"], ("[", "]"))
        out += [text[cursor:start], opening, text[start:end], closing]
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def final_loss(record: dict[str, Any]) -> float:
    steps = record.get("steps") or []
    loss = steps[-1].get("loss") if steps else None
    return float(loss["total"]) if isinstance(loss, dict) and "total" in loss else float("-inf")


def pick_example(records: Sequence[dict[str, Any]]) -> tuple[dict[str, Any] | None, bool]:
    """(the record to show, whether it is a success): a success first, else the closest case, i.e. the answer
    was kept and the attack loss L_opt got highest; else any attacked record."""
    attacked = [r for r in records if r.get("attacked")]
    successes = [r for r in attacked if r.get("outcome") == "success"]
    if successes:
        return successes[0], True
    kept = [r for r in attacked if r.get("answer_kept")]
    pool = kept or attacked
    if not pool:
        return None, False
    return max(pool, key=final_loss), False


def verdict_reason(verdict: dict[str, Any] | None) -> str:
    """The judge's own reason: the false equations for the arithmetic checker, else its raw output."""
    if not verdict:
        return "not judged (the answer changed)"
    judge = verdict.get("judge", "judge")
    detail = verdict.get("detail") or {}
    false = detail.get("false_equations")
    if false:
        shown = "; ".join(str(e.get("text", e)) if isinstance(e, dict) else str(e) for e in false[:3])
        return f"{judge}: false equation {shown}"
    raw = " ".join(str(verdict.get("raw", "")).split())
    return f"{judge}: {raw[:200]}" if raw else f"{judge}: label {verdict.get('label')}"


def _block(label: str, text: str, width: int = 100) -> list[str]:
    indent = " " * 22
    body = textwrap.wrap(" ".join(str(text).split()) or "-", width=width - len(indent)) or ["-"]
    return [f"  {label:<19} {body[0]}", *(indent + line for line in body[1:])]


def format_matcha_example(record: dict[str, Any], *, success: bool, where: str = "") -> str:
    """A plain-text account of one attacked record (stage ``matcha_outcome``)."""
    kind = record.get("outcome")
    head = (f"Worked example{where}: an attack that succeeded"
            if success else f"Worked example{where}: no attack succeeded; the closest case "
            f"({'answer kept, ' if record.get('answer_kept') else ''}highest attack loss "
            f"L_opt = {final_loss(record):.3f})")
    perturbed = record.get("perturbed_question")
    lines = [head, *_block("original question", record.get("clean_question", ""))]
    if perturbed is None:
        lines += _block("perturbed question", "(an embedding-level perturbation has no text; max |delta| = "
                        f"{record.get('max_abs_delta')})")
    else:
        lines += _block("perturbed question", marked_question(perturbed, record.get("edits") or []))
        lines.append(" " * 22 + f"({LEGEND})")
    lines += _block("clean answer", f"{record.get('clean_answer')}   (gold {record.get('gold')}, "
                    f"target {record.get('target')})")
    lines += _block("clean reasoning", _reasoning(record.get("clean_completion", "")))
    lines += _block("perturbed answer", str(record.get("perturbed_answer")))
    lines += _block("perturbed reasoning", record.get("perturbed_cot") or "-")
    lines += _block("verdict", f"{OUTCOME_WORDS.get(kind or '', kind)}; {verdict_reason(record.get('reasoning'))}")
    error_type = record.get("error_type")
    if error_type:
        lines += _block("error type", f"{error_type.get('category')} (decided by {error_type.get('judge')})")
    return "\n".join(lines)


def _reasoning(completion: str) -> str:
    from robusteval.data.answers import split_answer_and_cot

    return split_answer_and_cot(completion)[1] or "-"
