"""robusteval: measure how robust large language models really are.

The Python API is the product; the ``robusteval`` command is a thin shell over it::

    import robusteval as rv

    model = rv.load_model("hf:./my-model", dtype="bfloat16")
    data = rv.DataSpec("gsm8k", "gsm8k/test.jsonl", limit=100)
    summary = rv.attack_matcha(rv.MatchaRunConfig(data=data, level="token"), model, "runs/matcha")
    run = rv.load_run("runs/matcha")          # identity, info, summary, records(stage)
    rv.report(["runs/matcha"], out="report.html")  # one self-contained HTML page of any runs

Every pipeline takes a typed config, a backend and a run store (or a run directory, opened, locked and
checked for you) and returns its summary, which is also written to ``summary.json``. Names are imported
lazily, so ``import robusteval`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from robusteval._version import __version__

#: public name -> (module, attribute); resolved on first use.
_EXPORTS: dict[str, tuple[str, str]] = {
    # models and data
    "load_model": ("robusteval.models.loading", "load_model"),
    "describe_model": ("robusteval.models.identity", "describe_model"),
    "DataSpec": ("robusteval.data.spec", "DataSpec"),
    "load_dataset": ("robusteval.data.loaders", "load_dataset"),
    # runs
    "load_run": ("robusteval.runs", "load_run"),
    "Run": ("robusteval.runs", "Run"),
    "open_run": ("robusteval.lifecycle", "open_run"),
    "compare_runs": ("robusteval.report.compare", "compare_runs"),
    "results_frame": ("robusteval.report.rates", "results_frame"),
    "RunStore": ("robusteval.store", "RunStore"),
    # where units run: in process (default) or on Ray workers (docs/scaling.md)
    "make_executor": ("robusteval.executors", "make_executor"),
    "use_executor": ("robusteval.executors", "use_executor"),
    # pipelines
    "EvalConfig": ("robusteval.evals.answer_first", "EvalConfig"),
    "evaluate": ("robusteval.evals.answer_first", "evaluate"),
    "MatchaRunConfig": ("robusteval.attacks.matcha.pipeline", "MatchaRunConfig"),
    "attack_matcha": ("robusteval.attacks.matcha.pipeline", "attack_matcha"),
    "TransferConfig": ("robusteval.attacks.matcha.transfer", "TransferConfig"),
    "transfer": ("robusteval.attacks.matcha.transfer", "transfer"),
    "RobustnessConfig": ("robusteval.evals.robustness", "RobustnessConfig"),
    "robustness": ("robusteval.evals.robustness", "robustness"),
    "prompt_robustness": ("robusteval.evals.prompt_robustness", "prompt_robustness"),
    "WordImportanceRunConfig": ("robusteval.attacks.wordimportance.pipeline", "WordImportanceRunConfig"),
    "attack_wordimportance": ("robusteval.attacks.wordimportance.pipeline", "attack_wordimportance"),
    "OrsConfig": ("robusteval.evals.ors", "OrsConfig"),
    "ors": ("robusteval.evals.ors", "ors"),
    "PerturbationSpec": ("robusteval.perturbations.spec", "PerturbationSpec"),
    "AuditConfig": ("robusteval.judges.audit", "AuditConfig"),
    "audit_judge": ("robusteval.judges.audit", "audit_judge"),
    # many models x methods x datasets from one TOML file (docs/study.md)
    "study": ("robusteval.studies.study", "study"),
    "load_study": ("robusteval.studies.plan", "load_study"),
    # errors: every refusal of bad input is a UserError (one line; the CLI exits with code 2)
    "UserError": ("robusteval.errors", "UserError"),
    "ConfigError": ("robusteval.config", "ConfigError"),
    "DataError": ("robusteval.errors", "DataError"),
    "BackendError": ("robusteval.errors", "BackendError"),
    # registries (what exists, with summaries)
    "ATTACKS": ("robusteval.attacks.base", "ATTACKS"),
    "register_attack": ("robusteval.attacks.base", "register_attack"),
}
# ``report`` is a package that is also callable: ``rv.report(run_dirs, out="report.html")``.
_SUBMODULES = ("variants", "report")

__all__ = ["__version__", *_EXPORTS, *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"robusteval.{name}")
    raise AttributeError(f"module 'robusteval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

