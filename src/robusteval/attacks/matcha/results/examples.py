"""The MATCHA example browser: every question of a run. An attacked one shows what the attack changed, what
the model said before and after, and every verdict the judges gave (with the judge's identity and raw output);
one that was not attacked shows its question and why (the "not attacked" filter).

Semantic-judge verdicts name the edit they judged by its text: the report has no tokenizer, so a token's text is
taken from the run's own records (each edit span of a perturbed question is the text of the token it marks, so
every token that survives in some perturbed question of the run has a known text). A token that appears in no
perturbed question (an insertion a later step replaced, a rejected proposal) is named by the attack record's own
``old_text``/``new_text`` (each proposal) and ``token_texts`` (each insertion draw), which runs record from issue
20 on; in older runs it is shown by its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from robusteval.attacks.matcha.results.commands import OUTCOME_STAGE
from robusteval.attacks.matcha.results.reasons import matcha_skip_reason
from robusteval.report.collect import runs_browser
from robusteval.report.highlight import Mark, text_block, verdict_marks
from robusteval.report.model import Browser, Filter
from robusteval.runs import Run

#: The clean pass's records (question and completion of every example, attacked or not).
CLEAN_STAGE = "matcha_clean"
NOT_ATTACKED = "not attacked"
OUTCOMES = {"success": ("SR", "sr", "answer kept, reasoning judged wrong"),
            "unsuccessful": ("UR", "ur", "answer kept, reasoning judged fine"),
            "wrong": ("WR", "wr", "the answer changed"),
            "unjudged": ("unjudged", "muted", "answer kept, the reasoning judge gave no verdict: a category of its own"),
            "clean_cot_wrong": ("clean reasoning already wrong", "muted",
                                "answer kept, the judge rejects the clean reasoning too: a category of its own"),
            "not_attacked": (NOT_ATTACKED, "muted", "this question was not attacked")}
#: Raw judge outputs longer than this are cut in the page (the run's store keeps them whole).
RAW_LIMIT = 2000
#: What the ``none`` semantic judge calls itself (``judges.semantic.AlwaysSameMeaning.name``).
NO_SEMANTIC_JUDGE = "none(always-same-meaning)"
#: Which checkpoint's generation decided an attacked example (``--success-check``).
DECIDED_AT = {"insertion": "right after the random insertions (insertion checkpoint)",
              "final": "after the last replacement step (final check)"}

TokenTexts = Mapping[int, str]


#: The token attack's edit kinds: (css class, what the tooltip says).
MATCHA_KINDS = {"inserted": ("ins", "inserted at random"),
                "replaced": ("rep", "inserted, then replaced by a gradient step")}


def matcha_edit_marks(edits: Sequence[Mapping[str, Any]] | None) -> list[Mark]:
    """The token attack's edit spans (offsets into the perturbed question, ``kind`` inserted or replaced)."""
    marks = []
    for edit in edits or ():
        css, what = MATCHA_KINDS.get(str(edit.get("kind")), ("ins", str(edit.get("kind"))))
        token = f" (token id {edit['token_id']})" if edit.get("token_id") is not None else ""
        marks.append([edit["start"], edit["end"], css, what + token])
    return marks


def _raw(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= RAW_LIMIT else text[:RAW_LIMIT] + f"… ({len(text) - RAW_LIMIT} more characters)"


def _outcome(record: Mapping[str, Any]) -> str:
    if not record.get("attacked", True):
        return "not_attacked"
    if record.get("outcome"):  # as the run counted it (a changed answer is "wrong" whatever the clean verdict)
        return str(record["outcome"])
    if record.get("clean_cot_wrong") is True:
        return "clean_cot_wrong"
    return "unrated"


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


def token_texts(records: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """Token id -> its text, from the edit spans of the records' perturbed questions (see the module docstring)."""
    texts: dict[int, str] = {}
    for record in records:
        question = record.get("perturbed_question")
        if not isinstance(question, str):
            continue
        for edit in record.get("edits") or ():
            token, start, end = edit.get("token_id"), edit.get("start"), edit.get("end")
            if isinstance(token, int) and isinstance(start, int) and isinstance(end, int) and end > start:
                texts.setdefault(token, question[start:end])
    return texts


def token_text(token: Any, texts: TokenTexts, recorded: Any = None) -> str:
    """A token as the page names it: its text (the record's own, else from ``texts``) in quotes, else its id."""
    text = recorded if isinstance(recorded, str) else texts.get(token) if isinstance(token, int) else None
    return repr(text) if text is not None else f"token {token} (text not recorded)"


def _is_unchecked(verdict: Mapping[str, Any]) -> bool:
    """A verdict of the ``none`` semantic judge: the edit was accepted without anyone looking."""
    return verdict.get("judge") == NO_SEMANTIC_JUDGE or (verdict.get("detail") or {}).get("method") == "none"


def _semantic_said(accepted: Any, verdict: Mapping[str, Any]) -> str:
    if verdict.get("rejected_by") == "max_drift":
        return (f"rejected before the semantic judge: drift {verdict.get('drift')} beyond --max-drift "
                f"{verdict.get('max_drift')} ({verdict.get('drift_measure')} measure)")
    if _is_unchecked(verdict):
        return "accepted without a check (semantic judge none)"
    return (f"{'accepted' if accepted else 'rejected'} by {verdict.get('judge', '?')}: "
            f"{_raw(verdict.get('raw')) or '(no output)'}")


def semantic_rows(record: Mapping[str, Any], texts: TokenTexts | None = None) -> list[list[str]]:
    """Every edit of one attack that the semantic gate saw, named by its text, and what the gate said."""
    texts = texts or {}
    rows = []
    for i, insertion in enumerate(record.get("insertions") or ()):
        tokens = insertion.get("tokens") or ()
        recorded = insertion.get("token_texts") or [None] * len(tokens)
        inserted = ", ".join(token_text(t, texts, r) for t, r in zip(tokens, recorded, strict=False))
        rows.append([f"random insertion {i + 1}" + (f": {inserted}" if inserted else ""),
                     _semantic_said(insertion.get("accepted"), insertion.get("semantic") or {})])
    for step in record.get("steps") or ():
        for proposal in step.get("proposals") or ():
            old = token_text(proposal.get("old"), texts, proposal.get("old_text"))
            new = token_text(proposal.get("new"), texts, proposal.get("new_text"))
            rows.append([f"step {step.get('step')}, position {proposal.get('position')}: {old} → {new}",
                         _semantic_said(proposal.get("accepted"), proposal.get("semantic") or {})])
    return rows


def _semantic_verdicts(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    draws = [i.get("semantic") or {} for i in record.get("insertions") or ()]
    return draws + [p.get("semantic") or {} for s in record.get("steps") or () for p in s.get("proposals") or ()]


def semantic_summary(record: Mapping[str, Any], n_rows: int) -> str:
    """The collapsed semantic block's title: how many verdicts, or that no judge looked at all."""
    verdicts = _semantic_verdicts(record)
    if verdicts and all(_is_unchecked(v) for v in verdicts):
        return f"edits: {n_rows}, none of them judged (semantic judge none: every edit accepted without a check)"
    judged = sum(1 for v in verdicts if v and not _is_unchecked(v) and v.get("rejected_by") != "max_drift")
    return f"semantic judge: {judged} verdict(s) on {n_rows} edit(s)"


def matcha_item(record: Mapping[str, Any], label: str, texts: TokenTexts | None = None) -> dict[str, Any]:
    """One attacked record (stage ``matcha_outcome``) as a browser item (``texts``: :func:`token_texts`)."""
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
    thinks = "clean_thinking" in record  # a thinking target: replies shown, traces folded
    completion = str(record.get("perturbed_reply" if thinks else "perturbed_completion") or "")
    marks, missing = verdict_marks(completion, [record.get("reasoning")])
    blocks: list[dict[str, Any]] = [
        {"pair": [["original question", text_block(record.get("clean_question"))],
                  ["perturbed question", shown]]},
        {"rows": [["answers", f"clean {record.get('clean_answer')} → perturbed {record.get('perturbed_answer')} "
                   f"(gold {record.get('gold')}, target {record.get('target')})"],
                  ["outcome", f"{short}: {meaning}"],
                  *([["decided at", DECIDED_AT.get(str(record["decided_at"]), str(record["decided_at"]))]]
                    if record.get("decided_at") else [])]},
        {"pair": [["clean answer and reasoning", text_block(record.get("clean_reply" if thinks
                                                                         else "clean_completion"))],
                  ["perturbed answer and reasoning", text_block(completion, marks)]]},
    ]
    if thinks:
        trace = str(record.get("perturbed_thinking") or "")
        trace_marks, trace_missing = verdict_marks(trace, [record.get("reasoning")])
        missing = [m for m in missing if m in trace_missing]
        blocks.append(thinking_block(record.get("clean_thinking"), trace, trace_marks,
                                     truncated=bool(record.get("perturbed_thinking_truncated")),
                                     source=record.get("reasoning_source")))
    verdicts = verdict_rows("reasoning judge", record.get("reasoning"))
    verdicts += verdict_rows("clean reasoning judge", record.get("clean_reasoning"))
    if missing:
        verdicts.append(["flagged, not found in the text", "; ".join(missing)])
    if category:
        verdicts += [["error type", f"{category} (decided by {error.get('judge', '?')})"],
                     ["error type: raw output", _raw(error.get("raw"))]]
    blocks.append({"rows": verdicts})
    semantic = semantic_rows(record, texts)
    if semantic:
        blocks.append({"more": semantic_summary(record, len(semantic)), "blocks": [{"rows": semantic}]})
    search = " ".join(str(record.get(k) or "") for k in ("id", "clean_question", "perturbed_question"))
    return {"title": f"{record.get('id')} · {label}", "badges": badges,
            "filters": {"outcome": short, "error": category or "none", "run": label}, "search": search,
            "blocks": blocks}


def thinking_block(clean: Any, perturbed: Any = None, marks: Any = None, *, truncated: bool = False,
                   source: Any = None) -> dict[str, Any]:
    """A thinking target's traces, folded (a ``<details>`` the reader opens): long, and never where the answer is
    read; the title says what the reasoning judge read (``--reasoning-source``) and whether a trace never closed."""
    judged = {"chain": "the judge read the replies", "trace": "the judge read these traces",
              "both": "the judge read these traces and the replies"}.get(str(source), "")
    title = "thinking traces" + (f" ({judged})" if judged else "")
    if truncated:
        title += "; the perturbed trace never closed: no answer"
    if perturbed is None:
        return {"more": title, "blocks": [{"text": text_block(str(clean or "(no trace)")), "label": "clean thinking"}]}
    return {"more": title, "blocks": [{"pair": [["clean thinking", text_block(str(clean or "(no trace)"))],
                                                ["perturbed thinking", text_block(str(perturbed or "(no trace)"),
                                                                                  marks or [])]]}]}


def skipped_item(record: Mapping[str, Any], clean: Mapping[str, Any] | None, label: str) -> dict[str, Any]:
    """A question the attack left alone: its question, why, and the clean completion the reason refers to."""
    clean = clean or {}
    reason = matcha_skip_reason(record) or "not recorded"
    question = record.get("clean_question") or clean.get("question")
    completion = record.get("clean_completion") or clean.get("completion")
    blocks: list[dict[str, Any]] = [
        {"text": text_block(question if question is not None else "(question not recorded)"), "label": "question"},
        {"rows": [["why not attacked", reason],
                  ["answers", f"clean {record.get('clean_answer', clean.get('predicted'))} (gold "
                   f"{record.get('gold', clean.get('gold'))})"]]}]
    if "thinking" in clean:  # a thinking target: its reply shown, its trace folded
        blocks.append({"text": text_block(str(clean.get("reply") or "(no reply: the trace never closed)")),
                       "label": "clean answer and reasoning"})
        title = "thinking trace" + ("; it never closed: no answer" if clean.get("thinking_truncated") else "")
        blocks.append({"more": title, "blocks": [{"text": text_block(str(clean.get("thinking") or "(no trace)")),
                                                  "label": "clean thinking"}]})
    elif completion is not None:
        blocks.append({"text": text_block(completion), "label": "clean answer and reasoning"})
    return {"title": f"{record.get('id')} · {label}", "badges": [[NOT_ATTACKED, "muted"]],
            "filters": {"outcome": NOT_ATTACKED, "error": "none", "run": label},
            "search": f"{record.get('id')} {question or ''} {reason}", "blocks": blocks}


def matcha_items(run: Run, label: str) -> list[dict[str, Any]]:
    rows = run.records(OUTCOME_STAGE)
    texts = token_texts(rows)
    skipped = [r for r in rows if not r.get("attacked")]
    clean: dict[str, Mapping[str, Any]] = {}
    if skipped and CLEAN_STAGE in run.stages:
        clean = {str(r.get("id")): r for r in run.records(CLEAN_STAGE)}
    return [matcha_item(r, label, texts) if r.get("attacked") else skipped_item(r, clean.get(str(r.get("id"))), label)
            for r in rows]


def matcha_browser(runs: Sequence[Run]) -> Browser:
    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        outcomes = [v[0] for v in OUTCOMES.values() if any(i["filters"]["outcome"] == v[0] for i in items)]
        errors = sorted({i["filters"]["error"] for i in items} - {"none"})
        return [Filter("outcome", "Outcome", outcomes),
                Filter("error", "Error type", [*errors, "none"] if errors else ["none"])]

    return runs_browser("matcha-examples", "Questions, attacked or not", [r for r in runs if OUTCOME_STAGE in r.stages],
                        matcha_items, filters, empty="no questions in these runs")
