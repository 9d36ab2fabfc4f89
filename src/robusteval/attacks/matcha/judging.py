"""How MATCHA judges the attacked examples: the clean and the perturbed reasoning, under ours or the authors'
counting (a part of :class:`~robusteval.attacks.matcha.run.MatchaRunner`, kept apart so the runner's file holds
the running)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from robusteval.attacks.matcha.authors import authors_reasoning, authors_verdicts
from robusteval.attacks.matcha.config import MatchaConfig
from robusteval.metrics.matcha import outcome

#: (question, reference completion, perturbed completion) -> {"reasoning_correct": bool|None, ...}
ReasoningJudgeFn = Callable[[list[tuple[str, str, str]]], list[dict[str, Any]]]


class MatchaJudging:
    """The runner's judging; the runner sets these attributes in its ``__init__``."""

    config: MatchaConfig
    reasoning_judge: ReasoningJudgeFn

    def perturbed_verdicts(self, items: Sequence[tuple[str, str, str]],
                           sentences_from: Sequence[str | None] | None = None) -> list[dict[str, Any]]:
        """The reasoning verdicts of (question, clean completion, perturbed completion) items.

        Ours: the reasoning judge reads the question and both full completions. The authors' (--count authors):
        it reads only the reasoning after the clean completion's answer sentence (after that of
        ``sentences_from[k]`` where given: their final check's, the insertion checkpoint's completion;
        :func:`.authors.authors_verdicts`), and an empty reasoning on either side is judged wrong without asking
        (their ``auto_rater_gpt`` returns 0)."""
        if self.config.counting != "authors":
            return self.reasoning_judge(list(items)) if items else []
        return authors_verdicts(items, self.reasoning_judge, sentences_from)

    def judge(self, attacked: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Judge every attacked example's clean reasoning, and the perturbed reasoning where the answer was kept
        (all verdicts cached). A clean reasoning already judged wrong makes the example ``clean_cot_wrong``:
        whatever the attack does, it cannot be credited with breaking that reasoning (our denominator)."""
        authors = self.config.counting == "authors"
        live = [r for r in attacked if not r.get("skipped")]
        kept = [r for r in live if r["answer_kept"]]

        # What the judge reads of each clean completion: the whole of it (a thinking target's: its reasoning
        # source), or (authors) its reasoning only.
        def text(record: dict[str, Any], side: str) -> str:
            return str(record.get(f"{side}_judged_text", record[f"{side}_completion"]))

        read = {r["id"]: authors_reasoning(text(r, "clean")) if authors else text(r, "clean") for r in live}

        def clean_item(record: dict[str, Any]) -> tuple[str, str, str]:
            reasoning = read[record["id"]]
            return record["clean_question"], record.get("gold_reasoning") or reasoning, reasoning

        no_cot = {r["id"] for r in live if authors and not read[r["id"]]}
        judged_clean = [r for r in live if r["id"] not in no_cot]
        verdicts = self.reasoning_judge([clean_item(r) for r in judged_clean]) if judged_clean else []
        clean_of = dict(zip((r["id"] for r in judged_clean), verdicts, strict=True))
        perturbed_of = dict(zip((r["id"] for r in kept), self.perturbed_verdicts(
            [(r["clean_question"], text(r, "clean"), text(r, "perturbed")) for r in kept],
            [r.get("checkpoint_judged_text") for r in kept]), strict=True))
        out = []
        for record in attacked:
            if record.get("skipped"):
                out.append({**record, "attacked": False, "outcome": None})
                continue
            clean_verdict = clean_of.get(record["id"])
            clean_ok = None if clean_verdict is None else clean_verdict.get("reasoning_correct")
            verdict = perturbed_of.get(record["id"])
            correct = None if verdict is None else verdict.get("reasoning_correct")
            judged = {**record, "attacked": True, "clean_reasoning": clean_verdict,
                      "clean_cot_wrong": None if clean_ok is None else not clean_ok, "reasoning": verdict,
                      "reasoning_wrong": None if correct is None else not correct,
                      **({"no_cot": True} if record["id"] in no_cot else {})}
            out.append({**judged, "outcome": outcome(judged, self.config.resolved_counting())})
        return out
