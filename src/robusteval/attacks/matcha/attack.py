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
        """The terminal table: the counting in the title (under the authors' counting with what each denominator
        counts), one row per denominator (the authors', which is the headline, then ours), every rate with its
        interval and n, UR/SR/WR marked ⚑ when the run is flagged (the flags' text follows the table:
        ``report.tables.print_flags``)."""
        from robusteval.metrics.formatting import format_rate
        from robusteval.metrics.matcha_summary import (
            FLAG,
            counting,
            denominator_name,
            denominators,
            flag_texts,
        )

        marker = f" {FLAG}" if flag_texts(summary) else ""

        def rates(numbers: Any) -> dict[str, str]:
            return {m: format_rate(numbers.get(m), (numbers.get("ci95") or {}).get(m)) + marker
                    for m in ("ur", "sr", "wr")}

        lines = [f"MATCHA {summary['level']}-level ({summary['variant']}), counting: {counting(summary)}, target "
                 f"answer: {summary['target_answer']}; judges: reasoning={summary['judges']['reasoning']}, "
                 f"semantic={summary['judges']['semantic']}"]
        # Every rate with its 95% interval; ACC is over n, UR/SR/WR over n_rated (see metrics.matcha).
        rows = [{**summary, "acc": format_rate(summary.get("acc"), (summary.get("ci95") or {}).get("acc")),
                 **rates(summary)}]
        shown = denominators(summary)  # the headline's first; {} under our counting (one denominator)
        for i, (name, denominator) in enumerate(shown.items()):
            lines.append(f"rates over {denominator_name(name)} n_rated{' (the headline)' if i == 0 else ''}: "
                         f"{denominator.get('definition') or '?'}")
            # n_rated names its denominator: "12 authors'" (the top-level numbers are the headline's), "10 ours"
            if i == 0:
                rows[0]["n_rated"] = f"{summary.get('n_rated')} {denominator_name(name)}"
            else:
                rows.append({"n_rated": f"{denominator.get('n')} {denominator_name(name)}", **rates(denominator),
                             **dict.fromkeys(("model", "dataset", "n", "n_correct", "acc", "n_attacked",
                                              "n_unjudged"), "")})
        columns = ["model", "dataset", "n", "n_correct", "acc", "n_attacked", "n_rated", "ur", "sr", "wr",
                   *(["n_unjudged"] if "n_unjudged" in summary else [])]
        return "\n".join(lines), rows, columns
