"""``robusteval attack matcha``: the registration of the MATCHA attack (light: the pipeline loads on use)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from robusteval.attacks.base import register_attack
from robusteval.attacks.matcha.config import MatchaRunConfig
from robusteval.data.example import Example
from robusteval.models.base import Backend
from robusteval.store import RunStore

#: The terminal table's headings of the categories' rates (the others are the summary's keys).
COLUMNS = {"unjudged_rate": "unjudged", "clean_cot_wrong_rate": "clean_wrong"}


@register_attack("matcha", summary="keep the answer, break the reasoning (white-box, token or embedding level)")
class MatchaAttack:
    """Answer/reasoning misalignment attack on answer-first chain-of-thought (MATCHA). Attacks the questions the
    model answers correctly (--target-answer gold) or keeps the model's own clean answer (--target-answer
    clean), perturbs only the question, and judges the new reasoning. Loss: L_opt = L_c - lambda*L_a. Paper
    defaults per dataset: a=0.2, k=0.5/0.25/0.5 and eps=0.02/0.005/0.03 for singleeq/gsm8k/strategyqa, j=5
    steps, 256 new tokens."""

    config_type = MatchaRunConfig
    data_kind = "qa"
    example = ("robusteval attack matcha --model hf:./tiny-llama --dataset gsm8k \\\n"
               "    --data-file gsm8k/test.jsonl --level token --target-answer clean \\\n"
               "    --judge arith --semantic-judge none --limit 5 --out runs/matcha-token")

    def identity(self, config: MatchaRunConfig, model: dict[str, Any] | None, examples: Sequence[Example]
                 ) -> dict[str, Any]:
        from robusteval.attacks.matcha.pipeline import matcha_identity

        return matcha_identity(config, model, examples)

    def run(self, config: MatchaRunConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
            load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> Any:
        from robusteval.attacks.matcha.pipeline import attack_matcha

        return attack_matcha(config, backend, store, load_judge=load_model, batch_size=batch_size)

    def summarise(self, store: RunStore) -> dict[str, Any]:
        stored = store.get_meta("summary")
        if stored is not None:
            return dict(stored)
        from robusteval.attacks.matcha.pipeline import outcome_records
        from robusteval.metrics.matcha import matcha_metrics

        counting = (store.identity.get("config") or {}).get("counting") or "ours"
        return {**matcha_metrics(outcome_records(store), counting)}

    def table(self, summary: Any) -> tuple[str, list[dict[str, Any]], list[str]]:
        """The terminal table: the counting in the title, what the rates are over (every attacked example, split
        into categories whose counts sum to it; under the authors' counting what each denominator counts), one
        row per denominator (the authors', which is the headline, then ours), every rate with its interval,
        UR/SR/WR and the other categories marked ⚑ when the run is flagged (the flags' text follows the table:
        ``report.tables.print_flags``), and the rates among the judged answers as a labelled secondary line."""
        from robusteval.metrics.formatting import format_rate
        from robusteval.metrics.matcha_summary import (
            FLAG,
            among_judged,
            categories,
            categories_text,
            counting,
            denominator_name,
            denominators,
            flag_texts,
            rates_over,
        )

        marker = f" {FLAG}" if flag_texts(summary) else ""
        keys = [c.key for c in categories(summary)]

        def rates(numbers: Any) -> dict[str, str]:
            return {COLUMNS.get(c.key, c.key): format_rate(c.rate, c.ci) + marker for c in categories(numbers)}

        over = rates_over(summary)
        lines = [f"MATCHA {summary['level']}-level ({summary['variant']}), counting: {counting(summary)}, target "
                 f"answer: {summary['target_answer']}; judges: reasoning={summary['judges']['reasoning']}, "
                 f"semantic={summary['judges']['semantic']}"]
        # Every rate with its 95% interval; ACC is over n, the categories over `over` (see metrics.matcha).
        rows = [{**summary, "acc": format_rate(summary.get("acc"), (summary.get("ci95") or {}).get("acc")),
                 **rates(summary), "outcomes": categories_text(summary)}]
        if over == "n_attacked":
            lines.append("rates over n_attacked (every attacked example, no judge decision shrinks it), by outcome: "
                         "changed = WR, broken = SR, intact = UR, unjudged = answer kept, no verdict"
                         + (", clean wrong = answer kept, clean reasoning already judged wrong"
                            if "clean_cot_wrong_rate" in keys else ""))
        shown = denominators(summary)  # the headline's first; {} under our counting (one denominator)
        for i, (name, denominator) in enumerate(shown.items()):
            lines.append(f"rates over {denominator_name(name)} {over}{' (the headline)' if i == 0 else ''}: "
                         f"{denominator.get('definition') or '?'}")
            # the denominator names itself: "12 authors'" (the top-level numbers are the headline's), "10 ours"
            if i == 0:
                rows[0][over] = f"{summary.get(over)} {denominator_name(name)}"
            else:
                rows.append({**dict.fromkeys(("model", "dataset", "n", "n_correct", "acc", "n_attacked",
                                              "n_unjudged"), ""),
                             over: f"{denominator.get('n')} {denominator_name(name)}", **rates(denominator),
                             "outcomes": categories_text(denominator)})
                keys += [c.key for c in categories(denominator) if c.key not in keys]
        for name, block in [("", summary), *((denominator_name(k), v) for k, v in list(shown.items())[1:])]:
            judged = among_judged(block)
            if judged:
                lines.append(f"secondary view, among the judged answers only ({name + ' ' if name else ''}"
                             f"n_judged = {judged.get('n')}; abstentions left out, so not the headline): "
                             + ", ".join(f"{c.key.upper()} {format_rate(c.rate, c.ci)}" for c in categories(judged)))
        # A category no row holds an example of (clean reasoning judged wrong) reads from the outcomes alone.
        shown_keys = [k for k in keys if k != "clean_cot_wrong_rate" or any(
            (b.get("counts") or {}).get("clean_cot_wrong") for b in (summary, *shown.values()))]
        columns = ["model", "dataset", "n", "n_correct", "acc", "n_attacked",
                   *(["n_rated"] if over == "n_rated" else []), *(COLUMNS.get(k, k) for k in shown_keys), "outcomes",
                   *(["n_unjudged"] if over == "n_rated" and "n_unjudged" in summary else [])]
        if not any(row.get("outcomes") for row in rows):
            columns.remove("outcomes")
        return "\n".join(lines), rows, columns
