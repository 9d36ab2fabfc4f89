"""``robusteval attack wordimportance``: the registration of the word-importance attack (light: the pipeline
loads on use)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from robusteval.attacks.base import register_attack
from robusteval.attacks.wordimportance.config import WordImportanceRunConfig
from robusteval.attacks.wordsearch.settings import RATES
from robusteval.data.example import Example
from robusteval.models.base import Backend
from robusteval.store import RunStore


@register_attack("wordimportance", summary="black-box hard-label attack: rank words, then perturb them in order")
class WordImportanceAttack:
    """Word-importance attack on a model used as a classifier (it only has to return a label). Ranking:
    importance of a word = drop of the confidence in the true label when it is deleted (label log-probs when
    the backend can score, else the share of sampled answers naming the true label). Perturbation: in that
    order, keep the candidate that lowers the confidence most; success when the greedy label flips; stop
    before the perturbed-word rate exceeds alpha or when the query budget is spent. --method is one
    perturbation method, or 'combined': for Chinese the patent's nine (C-traditional, C-pinyin, C-radical,
    C-morphonym, C-shuffle, W-homophone, W-synonym, W-wordembedding, W-maskedlm), for English C-keyboard,
    C-ocr, C-swap, C-shuffle, W-synonym, W-wordembedding, W-maskedlm. Reports attack success rate, accuracy
    under attack, perturbed-word % and queries per rate."""

    config_type = WordImportanceRunConfig
    data_kind = "label"
    example = ("robusteval attack wordimportance --model hf:./tiny-nli --dataset ocnli \\\n"
               "    --data-file ocnli/dev.json --method C-homophone --rates 0.05,0.1,0.2,0.3 \\\n"
               "    --budget 300 --limit 50 --out runs/wi-homophone --write-adv runs/adv-homophone.jsonl")

    def identity(self, config: WordImportanceRunConfig, model: dict[str, Any] | None,
                 examples: Sequence[Example]) -> dict[str, Any]:
        from robusteval.attacks.wordimportance.pipeline import wordimportance_identity

        return wordimportance_identity(config, model, examples)

    def run(self, config: WordImportanceRunConfig, backend: Backend, store: RunStore | str | os.PathLike[str], *,
            load_model: Callable[[str], Backend] | None = None, batch_size: int = 8) -> Any:
        from robusteval.attacks.wordimportance.pipeline import attack_wordimportance

        return attack_wordimportance(config, backend, store, load_model=load_model, batch_size=batch_size)

    def summarise(self, store: RunStore) -> dict[str, Any]:
        stored = store.get_meta("summary")
        if stored is not None:
            return dict(stored)
        from robusteval.attacks.wordimportance.pipeline import attack_records
        from robusteval.metrics.wordimportance import attack_summary

        rates = store.identity.get("rates") or RATES
        return attack_summary(attack_records(store), rates)

    def table(self, summary: Any) -> tuple[str, list[dict[str, Any]], list[str]]:
        from robusteval.metrics.formatting import format_rate
        from robusteval.metrics.stats import wilson_interval

        title = f"word-importance attack: {summary['method']} on {summary['model']} (n={summary['n']})"
        n = summary["n"]
        rows = []
        for rate, values in summary["by_rate"].items():
            wins, failed = values["n_success"], values["n_failed"]
            # Each rate with its Wilson interval: accuracies over all n examples, the success rate over the
            # attacked ones (successes + failures).
            intervals = {"original_accuracy": wilson_interval(wins + failed, n),
                         "accuracy_under_attack": wilson_interval(failed, n),
                         "attack_success_rate": wilson_interval(wins, wins + failed)}
            rows.append({"rate": rate, **values, **{name: format_rate(values[name], ci)
                                                     for name, ci in intervals.items()}})
        return title, rows, ["rate", "n_success", "n_failed", "n_skipped", "original_accuracy",
                             "accuracy_under_attack", "attack_success_rate", "avg_perturbed_word_pct",
                             "avg_words_per_input", "avg_queries"]
