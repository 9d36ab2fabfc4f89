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
from typing import TYPE_CHECKING, Any

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
    "MatchaRunConfig": ("robusteval.attacks.matcha.config", "MatchaRunConfig"),
    "attack_matcha": ("robusteval.attacks.matcha.pipeline", "attack_matcha"),
    "TransferConfig": ("robusteval.attacks.matcha.transfer_config", "TransferConfig"),
    "transfer": ("robusteval.attacks.matcha.transfer", "transfer"),
    "RobustnessConfig": ("robusteval.evals.robustness", "RobustnessConfig"),
    "robustness": ("robusteval.evals.robustness", "robustness"),
    "PromptRobustnessConfig": ("robusteval.evals.prompt_robustness", "PromptRobustnessConfig"),
    "prompt_robustness": ("robusteval.evals.prompt_robustness", "prompt_robustness"),
    "PromptSearchConfig": ("robusteval.evals.prompt_robustness", "PromptSearchConfig"),
    "prompt_search": ("robusteval.evals.prompt_robustness", "prompt_search"),
    "PromptSpreadConfig": ("robusteval.evals.prompt_robustness", "PromptSpreadConfig"),
    "prompt_spread": ("robusteval.evals.prompt_robustness", "prompt_spread"),
    "WordImportanceRunConfig": ("robusteval.attacks.wordimportance.config", "WordImportanceRunConfig"),
    "attack_wordimportance": ("robusteval.attacks.wordimportance.pipeline", "attack_wordimportance"),
    "OrsConfig": ("robusteval.attacks.wordimportance.ors_config", "OrsConfig"),
    "ors": ("robusteval.attacks.wordimportance.ors", "ors"),
    "PerturbationSpec": ("robusteval.perturbations.spec", "PerturbationSpec"),
    # the blocks every method's config shares (generation=, judging=, prompt=)
    "GenerationOptions": ("robusteval.models.generation", "GenerationOptions"),
    "JudgeOptions": ("robusteval.judging", "JudgeOptions"),
    "PromptOptions": ("robusteval.evals.prompt_options", "PromptOptions"),
    "AuditConfig": ("robusteval.judges.audit_config", "AuditConfig"),
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

if TYPE_CHECKING:
    # What type checkers see (the package ships py.typed): every name of _EXPORTS, imported eagerly (``X as X``
    # re-exports it), and the submodule ``variants``. At run time they resolve lazily through __getattr__ below.
    # ``report`` stays Any to a checker: typed as the function, ``robusteval.report.tables`` would be an error;
    # typed as the module, ``rv.report(...)`` would. tests/test_public_types.py keeps this block and _EXPORTS equal.
    from robusteval import variants as variants
    from robusteval.attacks.base import ATTACKS as ATTACKS
    from robusteval.attacks.base import register_attack as register_attack
    from robusteval.attacks.matcha.config import MatchaRunConfig as MatchaRunConfig
    from robusteval.attacks.matcha.pipeline import attack_matcha as attack_matcha
    from robusteval.attacks.matcha.transfer import transfer as transfer
    from robusteval.attacks.matcha.transfer_config import TransferConfig as TransferConfig
    from robusteval.attacks.wordimportance.config import WordImportanceRunConfig as WordImportanceRunConfig
    from robusteval.attacks.wordimportance.ors import ors as ors
    from robusteval.attacks.wordimportance.ors_config import OrsConfig as OrsConfig
    from robusteval.attacks.wordimportance.pipeline import (
        attack_wordimportance as attack_wordimportance,
    )
    from robusteval.config import ConfigError as ConfigError
    from robusteval.data.loaders import load_dataset as load_dataset
    from robusteval.data.spec import DataSpec as DataSpec
    from robusteval.errors import BackendError as BackendError
    from robusteval.errors import DataError as DataError
    from robusteval.errors import UserError as UserError
    from robusteval.evals.answer_first import EvalConfig as EvalConfig
    from robusteval.evals.answer_first import evaluate as evaluate
    from robusteval.evals.prompt_options import PromptOptions as PromptOptions
    from robusteval.evals.prompt_robustness import PromptRobustnessConfig as PromptRobustnessConfig
    from robusteval.evals.prompt_robustness import PromptSearchConfig as PromptSearchConfig
    from robusteval.evals.prompt_robustness import PromptSpreadConfig as PromptSpreadConfig
    from robusteval.evals.prompt_robustness import prompt_robustness as prompt_robustness
    from robusteval.evals.prompt_robustness import prompt_search as prompt_search
    from robusteval.evals.prompt_robustness import prompt_spread as prompt_spread
    from robusteval.evals.robustness import RobustnessConfig as RobustnessConfig
    from robusteval.evals.robustness import robustness as robustness
    from robusteval.executors import make_executor as make_executor
    from robusteval.executors import use_executor as use_executor
    from robusteval.judges.audit import audit_judge as audit_judge
    from robusteval.judges.audit_config import AuditConfig as AuditConfig
    from robusteval.judging import JudgeOptions as JudgeOptions
    from robusteval.lifecycle import open_run as open_run
    from robusteval.models.generation import GenerationOptions as GenerationOptions
    from robusteval.models.identity import describe_model as describe_model
    from robusteval.models.loading import load_model as load_model
    from robusteval.perturbations.spec import PerturbationSpec as PerturbationSpec
    from robusteval.report.compare import compare_runs as compare_runs
    from robusteval.report.rates import results_frame as results_frame
    from robusteval.runs import Run as Run
    from robusteval.runs import load_run as load_run
    from robusteval.store import RunStore as RunStore
    from robusteval.studies.plan import load_study as load_study
    from robusteval.studies.study import study as study

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

