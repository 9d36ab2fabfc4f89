"""PromptBench's performance drop rate, with paired intervals over the questions.

PDR = 1 - A(perturbed prompt) / A(clean prompt) (Zhu et al. 2023, PromptBench), on the same questions. It is the
RB-index of one set, so :mod:`robusteval.metrics.robustness` computes it: the value, and its paired bootstrap
interval over questions (every resample draws the same questions for the clean and the perturbed prompt), falling
back to the Newcombe-Wilson ratio box where the bootstrap collapses to a point (never a zero-width interval;
``*_ci95_method`` names which). A method's PDR is over its k prompts together: 1 - mean_j A(prompt j) / A(clean),
the RB-index of those prompts; the run's RB-index is the same over every perturbed prompt.

A perturbed prompt identical to the clean one (the method found nothing to change) measures the clean prompt again:
it is shown with its accuracy and left out of every PDR and of the RB-index, named with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.metrics.robustness import robustness_summary


def pdr_of(clean: Sequence[bool], prompts: Mapping[str, Sequence[bool]], changed: Mapping[str, bool], *,
           seed: int, n_resamples: int) -> dict[str, Any]:
    """``{"pdr", "pdr_ci95", "pdr_ci95_method", "T", "prompts_in_index"}`` over ``prompts`` (name -> correct per
    question, in the order of ``clean``); the prompts ``changed`` marks False are left out. ``pdr`` None: no
    changed prompt, or a clean accuracy of 0 (the ratio is undefined)."""
    n = len(clean)
    summary = robustness_summary(clean, prompts, changed_by_set={name: [changed[name]] * n for name in prompts},
                                 seed=seed, n_resamples=n_resamples)
    return {"pdr": summary["rb_index"], "pdr_ci95": summary["rb_index_ci95"],
            "pdr_ci95_method": summary["rb_index_ci95_method"], "T": summary["T"],
            "prompts_in_index": summary["sets_in_index"]}


def prompt_robustness_metrics(clean: Sequence[bool], prompts: Mapping[str, Sequence[bool]],
                              methods: Mapping[str, Sequence[str]], changed: Mapping[str, bool], *, seed: int,
                              n_resamples: int) -> dict[str, Any]:
    """Accuracy (n, Wilson interval) of the clean prompt and of each perturbed one, each prompt's drop and PDR
    with paired intervals, each method's PDR over its prompts (``methods``: method -> its prompt names), and the
    RB-index over every changed prompt."""
    n = len(clean)
    overall = robustness_summary(clean, prompts, changed_by_set={name: [changed[name]] * n for name in prompts},
                                 seed=seed, n_resamples=n_resamples)
    per_prompt: dict[str, dict[str, Any]] = {}
    for name, values in prompts.items():
        entry = dict(overall["sets"][name])
        entry.pop("changed_share", None)  # a prompt changes every question or none: the flag says it
        entry.pop("changed_share_ci95", None)
        entry.pop("n_changed", None)
        entry["changed"] = changed[name]
        entry.update({key: value for key, value in pdr_of(clean, {name: values}, changed, seed=seed,
                                                          n_resamples=n_resamples).items()
                      if key.startswith("pdr")})
        if not changed[name]:
            entry["excluded_reason"] = "the method changed nothing in the prompt: it measures the clean prompt again"
        per_prompt[name] = {"n": n, **entry}
    per_method = {}
    for method, names in methods.items():
        block = pdr_of(clean, {name: prompts[name] for name in names}, changed, seed=seed, n_resamples=n_resamples)
        accs = [per_prompt[name]["acc"] for name in names if per_prompt[name]["acc"] is not None]
        per_method[method] = {"prompts": list(names), "acc_mean": sum(accs) / len(accs) if accs else None, **block}
    return {
        "n": n,
        "acc_clean": overall["acc_original"],
        "acc_clean_ci95": overall["acc_original_ci95"],
        "n_correct_clean": overall["n_correct_original"],
        "prompts": per_prompt,
        "methods": per_method,
        "T": overall["T"],
        "prompts_in_index": overall["sets_in_index"],
        "prompts_excluded": overall["sets_excluded"],
        "rb_index": overall["rb_index"],
        "rb_index_ci95": overall["rb_index_ci95"],
        "rb_index_ci95_method": overall["rb_index_ci95_method"],
    }
