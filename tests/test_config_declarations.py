"""Each setting is declared once (issue 38, item 3): no two config classes declare an option of the same name, unless
it is listed here with why the two are different settings. A setting several configs share is declared in one class
they inherit (attacks/matcha/settings.py, evals/summary_settings.py, ...) or in a nested block (GenerationOptions,
JudgeOptions, PromptOptions, ReasoningOptions); a new config that writes one out again fails here. Read from the
source (no import), so it sees what each class declares itself, not what it inherits."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "robusteval"

#: option name -> the classes that each declare it (path:Class), and why they are different settings.
SAME_NAME_OTHER_SETTING: dict[str, tuple[set[str], str]] = {
    "seed": ({"attacks/matcha/settings.py:MatchaSettings", "attacks/matcha/transfer_config.py:TransferConfig",
              "attacks/wordimportance/config.py:WordImportanceRunConfig", "evals/answer_first/config.py:EvalConfig",
              "evals/prompt_robustness/config.py:PromptRobustnessConfig",
              "evals/prompt_robustness/config.py:PromptSearchConfig",
              "evals/prompt_robustness/config.py:PromptSpreadConfig", "evals/robustness/config.py:RobustnessConfig",
              "perturbations/perturb_config.py:PerturbConfig", "variants/configs.py:InstantiateConfig",
              "variants/configs.py:VariantsEvalConfig", "variants/configs.py:CheckConfig"},
             "each seeds its own method's draws (insertions, samples, perturbations, variable values), as its help says"),
    "out": ({"attacks/wordimportance/ors_config.py:OrsConfig", "variants/configs.py:InstantiateConfig",
             "variants/configs.py:ScoreConfig", "variants/configs.py:ImportConfig", "variants/configs.py:DraftConfig"},
            "each command's own output file or directory"),
    "limit": ({"attacks/matcha/transfer_config.py:TransferConfig", "data/spec.py:DataSpec",
               "variants/configs.py:VariantsEvalConfig", "variants/configs.py:DraftConfig"},
              "the first N of different things: dataset examples, a source run's perturbations, instances, problems"),
    "bootstrap": ({"attacks/wordimportance/ors_config.py:OrsConfig", "evals/summary_settings.py:BootstrapSettings"},
                  "ORS resamples a question with all its methods together, and has no --seed to be independent of"),
    "bootstrap_seed": ({"attacks/wordimportance/ors_config.py:OrsConfig", "evals/summary_settings.py:BootstrapSettings",
                        "variants/configs.py:GradingConfig"},
                       "the seed of three different resamplings (ORS questions; summary questions; VAR-MATH rounds)"),
    "label_mode": ({"evals/prompt_robustness/config.py:PromptSearchConfig", "evals/summary_settings.py:LabelModeSettings"},
                   "the search lowers it (part of its identity); elsewhere it only reads the summary"),
    "budget": ({"attacks/wordimportance/config.py:WordImportanceRunConfig",
                "evals/prompt_robustness/config.py:PromptSearchConfig"},
               "queries per example in the attack, over the whole search set in the prompt search"),
    "methods": ({"evals/prompt_robustness/config.py:PromptRobustnessConfig",
                 "evals/prompt_robustness/config.py:PromptSearchConfig"},
                "summary-only in the one, the candidates' source (in the identity) in the other"),
    "method": ({"attacks/wordimportance/config.py:WordImportanceRunConfig", "perturbations/perturb_config.py:PerturbConfig"},
               "the attack's perturbation methods (or combined) against the one method `perturb` applies"),
    "max_drift": ({"attacks/matcha/settings.py:MatchaSettings", "attacks/wordimportance/config.py:WordImportanceRunConfig"},
                  "a bound on different texts at different points: MATCHA's perturbed question before the semantic "
                  "judge, the attack's candidates before they are queried"),
    "math_grader": ({"evals/answer_first/config.py:EvalConfig", "variants/configs.py:GradingConfig"},
                    "the same grader choices (one constant), in eval's identity but not in VAR-MATH's re-gradable "
                    "summary"),
    "answer_type": ({"attacks/matcha/transfer_config.py:TransferConfig", "data/spec.py:DataSpec"},
                    "transfer's override of the source run's answer type, not a dataset's"),
    "dataset": ({"data/spec.py:DataSpec", "variants/configs.py:DraftConfig"},
                "draft's optional source (default jsonl, question mode), checked through a DataSpec"),
    "data_file": ({"data/spec.py:DataSpec", "variants/configs.py:DraftConfig"},
                  "draft's optional source, checked through a DataSpec"),
    "fields": ({"data/spec.py:DataSpec", "variants/configs.py:DraftConfig"},
               "draft's optional field mapping, checked through a DataSpec"),
    "json": ({"variants/configs.py:ValidateConfig", "variants/configs.py:CheckConfig"},
             "each command's own report switch"),
    "n": ({"variants/configs.py:InstantiateConfig", "variants/configs.py:CheckConfig"},
          "instances written per template against draws checked; a shared base would swap check's positional order"),
    "originals": ({"variants/configs.py:InstantiateConfig", "variants/configs.py:VariantsEvalConfig"},
                  "an output file of instantiate, an input of eval"),
    "templates": ({"variants/configs.py:TemplateFiles", "variants/configs.py:ImportConfig",
                   "variants/configs.py:CheckConfig"},
                  "import writes templates; check takes them as its positional arguments"),
}


def _declarations(root: Path = SRC) -> dict[str, set[str]]:
    """option name -> the classes (path:Class) whose own body declares it with ``option(...)``."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for statement in node.body:
                if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                        and isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name)
                        and statement.value.func.id == "option"):
                    found[statement.target.id].add(f"{path.relative_to(root).as_posix()}:{node.name}")
    return found


def test_no_setting_is_declared_twice_unless_it_is_another_setting() -> None:
    twice = {name: classes for name, classes in _declarations().items() if len(classes) > 1}
    unexplained = {name: sorted(classes - SAME_NAME_OTHER_SETTING.get(name, (set(), ""))[0])
                   for name, classes in twice.items()
                   if classes - SAME_NAME_OTHER_SETTING.get(name, (set(), ""))[0]}
    assert not unexplained, ("declared again: inherit the class that declares it or nest its block, or list it in "
                             f"SAME_NAME_OTHER_SETTING with why it is another setting: {unexplained}")


def test_the_list_holds_only_what_is_still_declared_twice() -> None:
    declarations = _declarations()
    stale = {name: sorted(classes - declarations.get(name, set()))
             for name, (classes, _) in SAME_NAME_OTHER_SETTING.items() if classes - declarations.get(name, set())}
    assert not stale, f"no longer declared there (remove from SAME_NAME_OTHER_SETTING): {stale}"


def test_the_scan_sees_a_declaration_written_twice(tmp_path: Path) -> None:
    """The scan itself: an option written out in two classes is found in both; one inherited is not."""
    (tmp_path / "a.py").write_text("class A:\n    steps: int = option(5)\n\nclass B(A):\n    pass\n",
                                   encoding="utf-8")
    (tmp_path / "c.py").write_text("class C:\n    steps: int = option(3)\n    other: int = 4\n"
                                   "    block: Any = nested()\n", encoding="utf-8")
    assert _declarations(tmp_path) == {"steps": {"a.py:A", "c.py:C"}}
