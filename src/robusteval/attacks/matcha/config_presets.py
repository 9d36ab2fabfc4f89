"""MATCHA's presets (``--preset paper|authors|fast``), as data: each a bundle of search settings, with per-dataset
values on top. A preset fills the settings a run leaves unset; a flag, a ``--config`` key or a study key that sets
one wins. The run identity records the values a preset resolved to, never its name, so a run started with
``--preset fast`` resumes under the same settings given one by one (and a preset changed in a later release is
refused on resume, as any other changed setting).

The sources: the paper (arXiv 2505.17406) and the MATCHA authors' public code (uiuc-focal-lab/MATCHA at 1c2afae:
``inference_tok_random_dual.py`` and ``inference_emb_attack.py``' argparse defaults); docs/matcha.md compares the
two step by step.
"""

from __future__ import annotations

from typing import Any

#: The paper attacks a seeded random sample of 500 StrategyQA questions.
PAPER_STRATEGYQA_SAMPLE = 500
#: Settings the token level alone takes (the embedding level inserts nothing): a preset leaves them unset there.
TOKEN_LEVEL_ONLY = {"success_check": None, "replacement_gate": None, "replacement_positions": None}

#: name -> {"help": one line, "values": settings, "datasets": {dataset: settings over "values"}, "levels": {level:
#: settings over those}}; a setting None there is left unset.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "help": "the paper's settings and its published tables' counting: a = 0.2, j = 5 steps, 256 new tokens, "
                "k and eps per dataset, L_a over n3, the authors' counting and insertion checkpoint, 500 "
                "sampled StrategyQA questions; refuses what the paper would not use (built-in exemplars, no LLM "
                "judge or no semantic judge)",
        "values": {"insert_ratio": 0.2, "steps": 5, "max_new_tokens": 256, "n_candidates": 1, "answer_loss": "n3",
                   "success_check": "insertion-and-final", "counting": "authors"},
        "datasets": {"singleeq": {"topk_ratio": 0.5, "epsilon": 0.02},
                     "gsm8k": {"topk_ratio": 0.25, "epsilon": 0.005},
                     "strategyqa": {"topk_ratio": 0.5, "epsilon": 0.03, "sample": PAPER_STRATEGYQA_SAMPLE}},
        "levels": {"embedding": TOKEN_LEVEL_ONLY},
    },
    "authors": {
        "help": "the MATCHA authors' code as it runs, bugs included: their argparse defaults (add_ratio 0.2, "
                "replace_ratio 0.25, p_size 0.005 for every dataset, 5 steps, 256 tokens), their counting, "
                "insertion checkpoint, replacement gate and positions, and their fallback reading an unreadable "
                "verdict as correct",
        "values": {"insert_ratio": 0.2, "topk_ratio": 0.25, "epsilon": 0.005, "step_fraction": 0.25, "steps": 5,
                   "max_new_tokens": 256, "n_candidates": 1, "counting": "authors",
                   "success_check": "insertion-and-final", "replacement_gate": "authors",
                   "replacement_positions": "authors", "judge_retries": 10,
                   "unreadable_verdicts": "authors-fallback"},
        "datasets": {},
        "levels": {"embedding": TOKEN_LEVEL_ONLY},
    },
    "fast": {
        "help": "a quick smoke run: one step, 64 new tokens, one redraw, attacked sequences up to 2,048 tokens "
                "(numbers not comparable with the paper's)",
        "values": {"steps": 1, "max_new_tokens": 64, "max_redraws": 1, "max_attack_tokens": 2048},
        "datasets": {},
        "levels": {},
    },
}

#: The paper's hyper-parameters per dataset, (top-k ratio, epsilon fraction): every run's defaults.
DATASET_DEFAULTS: dict[str, tuple[float, float]] = {
    name: (values["topk_ratio"], values["epsilon"]) for name, values in PRESETS["paper"]["datasets"].items()}
#: The hyper-parameters of a dataset the paper did not attack.
FALLBACK_DEFAULTS = (0.25, 0.005)

#: The choices of ``preset``: none (no preset) and the presets.
PRESET_NAMES = ("none", *PRESETS)


def preset_values(name: str, dataset: str, level: str) -> dict[str, Any]:
    """The settings preset ``name`` gives a run on ``dataset`` at ``level`` (none: no settings)."""
    if name == "none":
        return {}
    preset = PRESETS[name]
    values = {**preset["values"], **preset["datasets"].get(dataset, {}), **preset["levels"].get(level, {})}
    return {key: value for key, value in values.items() if value is not None}


def presets_setting(field: str) -> list[str]:
    """The presets that set ``field`` (for any dataset)."""
    return [name for name, preset in PRESETS.items()
            if field in preset["values"] or any(field in values for values in preset["datasets"].values())]


def preset_help() -> str:
    """The ``--preset`` flag's help: each preset in one line."""
    return "; ".join(f"{name}: {preset['help']}" for name, preset in PRESETS.items()) + (
        ". A flag or --config key wins over the preset; the run identity records the resolved values")


def presets_reference() -> str:
    """The presets' part of docs/config-reference.md: what each sets (per dataset and level on top)."""
    from robusteval.config import reference_cell, reference_value

    lines = ["## MATCHA presets (`--preset`, `preset = \"...\"`)", "",
             "A preset fills the settings a run leaves unset; a flag, a `--config` key or a study key wins. The run "
             "identity records the values, not the preset's name.", ""]
    for name, preset in PRESETS.items():
        lines += [f"### `{name}`", "", reference_cell(preset["help"]), "", "| key | value | where |", "|---|---|---|"]
        lines += [f"| `{key}` | {reference_value(value)} | every dataset |" for key, value in preset["values"].items()]
        for scope, tables in (("dataset", preset["datasets"]), ("level", preset["levels"])):
            for which, values in tables.items():
                lines += [f"| `{key}` | {reference_value(value)} | {scope} {which} |" for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)
