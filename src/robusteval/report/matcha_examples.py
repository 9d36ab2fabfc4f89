"""The MATCHA example browser: every attacked question, what the attack changed, what the model said before
and after, and every verdict the judges gave (with the judge's identity and raw output)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.report.collect import runs_browser
from robusteval.report.highlight import matcha_edit_marks, text_block, verdict_marks
from robusteval.report.model import Browser, Filter
from robusteval.runs import Run

#: ``attacks.matcha.pipeline.OUTCOME_STAGE`` (that module imports torch; a test pins the two together).
OUTCOME_STAGE = "matcha_outcome"
OUTCOMES = {"success": ("SR", "sr", "answer kept, reasoning judged wrong"),
            "unsuccessful": ("UR", "ur", "answer kept, reasoning judged fine"),
            "wrong": ("WR", "wr", "the answer changed"),
            "clean_cot_wrong": ("clean reasoning already wrong", "muted",
                                "the judge rejects the clean reasoning too: not rated")}
#: Raw judge outputs longer than this are cut in the page (the run's store keeps them whole).
RAW_LIMIT = 2000


def _raw(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= RAW_LIMIT else text[:RAW_LIMIT] + f"… ({len(text) - RAW_LIMIT} more characters)"


def _outcome(record: Mapping[str, Any]) -> str:
    if record.get("clean_cot_wrong") is True:
        return "clean_cot_wrong"
    return str(record.get("outcome") or "unrated")


def verdict_rows(name: str, verdict: Mapping[str, Any] | None) -> list[list[str]]:
    """Key/value rows of one judge verdict: who judged, what it decided, its raw output."""
    if not verdict:
        return [[name, "not judged (the answer changed)"]]
    label = verdict.get("label")
    said = {True: "accepted", False: "rejected", None: "unreadable verdict"}.get(label, str(label))
    rows = [[name, f"{said} by {verdict.get('judge', '?')}"], [f"{name}: raw output", _raw(verdict.get("raw"))]]
    members = (verdict.get("detail") or {}).get("members") or ()
    for member in members:
        rows.append([f"{name}: member {member.get('judge', '?')}",
                     f"{ {True: 'accepted', False: 'rejected'}.get(member.get('label'), 'unreadable')}: "
                     f"{_raw(member.get('raw'))}"])
    return rows


def semantic_rows(record: Mapping[str, Any]) -> list[list[str]]:
    """Every semantic-judge verdict on the insertions and replacements of one attack."""
    rows = []
    for i, insertion in enumerate(record.get("insertions") or ()):
        verdict = insertion.get("semantic") or {}
        rows.append([f"random insertion {i + 1}", f"{'accepted' if insertion.get('accepted') else 'rejected'} by "
                     f"{verdict.get('judge', '?')}: {_raw(verdict.get('raw')) or '(no output)'}"])
    for step in record.get("steps") or ():
        for proposal in step.get("proposals") or ():
            verdict = proposal.get("semantic") or {}
            rows.append([f"step {step.get('step')}, position {proposal.get('position')}",
                         f"token {proposal.get('old')} → {proposal.get('new')} "
                         f"{'accepted' if proposal.get('accepted') else 'rejected'} by {verdict.get('judge', '?')}: "
                         f"{_raw(verdict.get('raw')) or '(no output)'}"])
    return rows


def matcha_item(record: Mapping[str, Any], label: str) -> dict[str, Any]:
    """One attacked record (stage ``matcha_outcome``) as a browser item."""
    outcome = _outcome(record)
    short, css, meaning = OUTCOMES.get(outcome, (outcome, "muted", ""))
    error = record.get("error_type") or {}
    category = error.get("category") if isinstance(error, Mapping) else None
    badges = [[short, css]] + ([[category, "etype"]] if category else [])
    perturbed = record.get("perturbed_question")
    if perturbed is None:
        shown = text_block(f"(an embedding-level perturbation has no text: max |δ| = {record.get('max_abs_delta')}"
                           f", ε = {record.get('epsilon')})")
    else:
        shown = text_block(perturbed, matcha_edit_marks(record.get("edits")))
    completion = str(record.get("perturbed_completion") or "")
    marks, missing = verdict_marks(completion, [record.get("reasoning")])
    blocks: list[dict[str, Any]] = [
        {"pair": [["original question", text_block(record.get("clean_question"))],
                  ["perturbed question", shown]]},
        {"rows": [["answers", f"clean {record.get('clean_answer')} → perturbed {record.get('perturbed_answer')} "
                   f"(gold {record.get('gold')}, target {record.get('target')})"],
                  ["outcome", f"{short}: {meaning}"]]},
        {"pair": [["clean answer and reasoning", text_block(record.get("clean_completion"))],
                  ["perturbed answer and reasoning", text_block(completion, marks)]]},
    ]
    verdicts = verdict_rows("reasoning judge", record.get("reasoning"))
    verdicts += verdict_rows("clean reasoning judge", record.get("clean_reasoning"))
    if missing:
        verdicts.append(["flagged, not found in the text", "; ".join(missing)])
    if category:
        verdicts += [["error type", f"{category} (decided by {error.get('judge', '?')})"],
                     ["error type: raw output", _raw(error.get("raw"))]]
    blocks.append({"rows": verdicts})
    semantic = semantic_rows(record)
    if semantic:
        blocks.append({"more": f"semantic judge: {len(semantic)} verdict(s) on the edits", "blocks": [{"rows": semantic}]})
    search = " ".join(str(record.get(k) or "") for k in ("id", "clean_question", "perturbed_question"))
    return {"title": f"{record.get('id')} · {label}", "badges": badges,
            "filters": {"outcome": short, "error": category or "none", "run": label}, "search": search,
            "blocks": blocks}


def matcha_items(run: Run, label: str) -> list[dict[str, Any]]:
    return [matcha_item(r, label) for r in run.records(OUTCOME_STAGE) if r.get("attacked")]


def matcha_browser(runs: Sequence[Run]) -> Browser:
    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        outcomes = [v[0] for v in OUTCOMES.values() if any(i["filters"]["outcome"] == v[0] for i in items)]
        errors = sorted({i["filters"]["error"] for i in items} - {"none"})
        return [Filter("outcome", "Outcome", outcomes),
                Filter("error", "Error type", [*errors, "none"] if errors else ["none"])]

    return runs_browser("matcha-examples", "Attacked questions", [r for r in runs if OUTCOME_STAGE in r.stages],
                        matcha_items, filters, empty="no attacked questions in these runs")
