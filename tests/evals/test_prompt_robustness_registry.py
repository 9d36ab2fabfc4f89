"""Prompt robustness on the method registry (issue 39 item 4, on issue 38's registry): its three registrations,
what a study reads from them, and its report section in real Chromium with hostile prompt text (shown as text,
never run), on the tiny model."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import robusteval as rv
from helpers.browser import open_report, wait_until_ready
from robusteval.cli.main import command_modules
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.prompt_robustness import (
    PromptRobustnessConfig,
    PromptSearchConfig,
    PromptSpreadConfig,
    prompt_robustness,
    prompt_search,
    prompt_spread,
)
from robusteval.evals.prompt_robustness.outcomes import decode
from robusteval.evals.prompt_robustness.pipeline import COMMAND as PERTURB
from robusteval.evals.prompt_robustness.search_pipeline import COMMAND as SEARCH
from robusteval.evals.prompt_robustness.spread_pipeline import COMMAND as SPREAD
from robusteval.methods import method_named, method_of_command
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.report.pairing import pairwise, run_outcomes
from robusteval.runs import load_run
from robusteval.store.stages import STAGES
from robusteval.studies.methods import get_method, method_names

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def test_three_registrations_with_their_commands_sections_and_headlines() -> None:
    expected = {"prompt-robustness": (PERTURB, PromptRobustnessConfig, (("pdr", "lower"), ("acc[clean]", "higher"))),
                "prompt-search": (SEARCH, PromptSearchConfig, (("acc[found]", "higher"), ("drop", "lower"))),
                "prompt-spread": (SPREAD, PromptSpreadConfig, (("worst_case", "higher"), ("spread", "lower")))}
    for order, (name, (command, config, headlines)) in enumerate(expected.items(), 60):
        spec = method_named(name)
        assert spec is not None and method_of_command(command) is spec
        assert (spec.command, spec.section, spec.headlines, spec.order) == (command, "prompt-robustness",
                                                                             headlines, order)
        assert spec.cli == "robusteval.cli.prompt_robustness" and spec.load_results() is not None
        method = get_method(name)  # what a study cell runs: the command's config, classification data
        assert method is not None and name in method_names()
        assert (method.config_type, method.data_kind, method.headlines) == (config, "label", headlines)
    assert command_modules().count("robusteval.cli.prompt_robustness") == 1
    assert {"perturbed_prompt", "prompt_search"} <= {entry.name for entry in STAGES}


def _hostile_template(path: Path) -> Path:
    template = json.loads((resources.files("robusteval.prompts") / "classification" / "yesno.json").read_text())
    template["prefix"] = template["prefix"].replace("Answer each question", f"Answer {HOSTILE} each question", 1)
    path.write_text(json.dumps(template), encoding="utf-8")
    return path


def test_report_section_shows_hostile_prompt_text_as_text(tiny_backend: Any, tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", str(resources.files("robusteval.data.samples") / "yesno.jsonl"),
                       answer_type="label", limit=6)
    template = str(_hostile_template(tmp_path / "hostile.json"))
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(f"Reply {HOSTILE} with yes or no.\n", encoding="utf-8")
    english = PerturbationSpec(language="en")
    runs = [tmp_path / name for name in ("perturb", "search", "spread")]
    prompt_robustness(PromptRobustnessConfig(data=data, perturbation=english, methods="C-swap", prompts_per_method=1,
                                             prompt=PromptOptions(template=template), label_mode="soft",
                                             bootstrap=50), tiny_backend, runs[0])
    prompt_search(PromptSearchConfig(data=data, perturbation=english, methods="C-swap", budget=8, search_size=2,
                                     prompt=PromptOptions(template=template), label_mode="soft",
                                     bootstrap=50), tiny_backend, runs[1])
    prompt_spread(PromptSpreadConfig(data=data, prompts_file=str(prompts), n_formats=1,
                                     prompt=PromptOptions(template=template),
                                     label_mode="soft", bootstrap=50), tiny_backend, runs[2])
    out = rv.report(runs, out=tmp_path / "report.html")
    with open_report(out, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        texts = page.eval_on_selector_all("#prompt-robustness pre.text", "ps => ps.map(p => p.textContent)")
        clean = [text for text in texts if HOSTILE in text]
        assert len(clean) >= 2  # the clean instruction beside the worst prompt and beside the found one
        assert HOSTILE in page.locator("#prompt-robustness table").last.inner_text()  # the spread's file prompt
        # No element made from the text: the only scripts in the section are the browsers' JSON data blocks.
        kinds = page.eval_on_selector_all("#prompt-robustness script", "ss => ss.map(s => s.type)")
        assert page.locator("img").count() == 0 and set(kinds) == {"application/json"}
        assert opened.errors == []  # no alert ran


def test_a_run_without_per_example_outcomes_is_said_not_tested(tiny_backend: Any, tmp_path: Path) -> None:
    data = rv.DataSpec("jsonl", str(resources.files("robusteval.data.samples") / "yesno.jsonl"),
                       answer_type="label", limit=6)
    config = PromptSpreadConfig(data=data, n_formats=2, label_mode="soft", bootstrap=50)
    prompt_spread(config, tiny_backend, tmp_path / "run")
    new = load_run(tmp_path / "run")
    summary = dict(new.summary or {})
    assert decode(summary) is not None
    summary.pop("per_example")  # as a run made before the outcomes were kept
    old = replace(new, summary=summary)
    value = new.summary["worst_case_acc"]  # type: ignore[index]
    assert run_outcomes(new, "worst_case", value) is not None and run_outcomes(old, "worst_case", value) is None
    test = pairwise("spread", "worst_case", "higher", [("a", new, "worst_case", value),
                                                       ("b", old, "worst_case", value)])[0].test
    assert test.status == "not tested" and "no per-example outcomes" in test.note
    # A block that does not match its ids is no outcomes either.
    summary["per_example"] = {"ids": ["a", "b"], "correct": {"original": "1"}}
    assert decode(summary) is None
