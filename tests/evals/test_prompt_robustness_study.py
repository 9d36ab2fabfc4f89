"""Prompt robustness in a study (issue 39, item 4 and its "Done when"): the three modes registered as methods
(``prompt-robustness``, ``prompt-search``, ``prompt-spread``) in a 2-model study on the bundled yes/no sample, with
the tiny trained model and the tiny random one: their headline columns in the leaderboard with paired tests, the
report's section with the worst prompt's edits marked (real Chromium), and ``runs compare --format latex`` of the
study compiled by pdflatex. Soft labels: the tiny models write no readable yes/no, but they score the labels."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.browser import open_report, wait_until_ready
from helpers.studies import YESNO
from helpers.tex import compile_tables
from robusteval.cli.main import main
from robusteval.evals.prompt_robustness.outcomes import decode
from robusteval.metrics.significance import binomial_two_sided
from robusteval.report.pairing import run_outcomes
from robusteval.report.rates import run_rates
from robusteval.runs import load_run

pytestmark = pytest.mark.slow

MODELS = ("alpha", "beta")
#: (study method, its headline metrics and how they read), as the registrations declare them.
HEADLINES = {
    "prompt-robustness": {"pdr": "lower is more robust", "acc@clean": "higher is better"},
    "prompt-search": {"acc@found": "higher is better", "drop": "lower is more robust"},
    "prompt-spread": {"worst_case": "higher is more robust", "spread": "lower is more robust"},
}
#: The headlines that are shares of the same examples in both runs: McNemar.
SHARES = ("prompt-robustness:yn:acc@clean", "prompt-search:yn:acc@found", "prompt-spread:yn:worst_case")


@pytest.fixture(scope="module")
def study_dir(tiny_trained_dir: Path, tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prompt-study")
    study = root / "study.toml"
    study.write_text(f"""title = "prompt robustness: alpha against beta"
batch_size = 8

[[models]]
name = "alpha"
spec = "hf:{tiny_trained_dir}"
device = "cpu"

[[models]]
name = "beta"
spec = "hf:{tiny_llama_dir}"
device = "cpu"

[datasets.yn]
dataset = "jsonl"
data_file = "{YESNO}"
answer_type = "label"
label_mode = "soft"
bootstrap = 200

[methods.prompt-robustness]
datasets = ["yn"]
methods = "C-swap,C-keyboard"
prompts_per_method = 2
language = "en"

[methods.prompt-search]
datasets = ["yn"]
methods = "C-swap,C-keyboard"
budget = 100
search_size = 5
language = "en"

[methods.prompt-spread]
datasets = ["yn"]
n_formats = 12
""", encoding="utf-8")
    result = rv.study(study)
    assert not result.failed, result.failed
    return result.out


def _summary(study_dir: Path, model: str, method: str) -> dict[str, Any]:
    return json.loads((study_dir / model / method / "yn" / "summary.json").read_text())


def test_the_three_modes_are_leaderboard_columns_with_paired_tests(study_dir: Path) -> None:
    board = json.loads((study_dir / "leaderboard.json").read_text())
    reads = {c["name"]: c["reads"] for c in board["columns"]}
    expected = {f"{method}:yn:{metric}": how for method, metrics in HEADLINES.items() for metric, how in
                metrics.items()}
    assert {name: reads.get(name) for name in expected} == expected
    cells = {(c["model"], c["column"]): c for c in board["cells"]}
    # Each cell is the run's own number, with its n and a (never zero-width) interval.
    for model in MODELS:
        perturb, search, spread = (_summary(study_dir, model, m) for m in HEADLINES)
        held = search["held_out"]
        shown = {"prompt-robustness:yn:pdr": (perturb["rb_index"], perturb["n"]),
                 "prompt-robustness:yn:acc@clean": (perturb["acc_clean"], perturb["n"]),
                 "prompt-search:yn:acc@found": (held["prompts"]["found"]["acc"], held["n"]),
                 "prompt-search:yn:drop": (held["prompts"]["found"]["drop"], held["n"]),
                 "prompt-spread:yn:worst_case": (spread["worst_case_acc"], spread["n"]),
                 "prompt-spread:yn:spread": (spread["spread"], spread["n"])}
        for column, (value, n) in shown.items():
            cell = cells[(model, column)]
            assert (cell["value"], cell["n"]) == (value, n), (model, column)
            assert cell["ci95"][0] < cell["ci95"][1], (model, column)
        assert search["queries"] <= 100 and len(search["held_out_ids"]) == 15
        assert spread["n_prompts"] == 13  # the template's own prompt and 12 formats
    tests = {p["column"]: p for p in board["pairwise"]}
    for column in expected:
        assert tests[column]["status"] == "tested", (column, tests[column])
        assert (tests[column]["model_a"], tests[column]["model_b"]) == MODELS
    # The shares are McNemar on the examples' stored outcomes: b, c and p recomputed here.
    for column in SHARES:
        method = column.split(":")[0]
        key = {"prompt-robustness": "clean", "prompt-search": "found"}.get(method)
        right = {}
        for model in MODELS:
            outcomes = decode(_summary(study_dir, model, method))
            assert outcomes is not None
            right[model] = (outcomes[key] if key else
                            {i: all(o[i] for o in outcomes.values()) for i in next(iter(outcomes.values()))})
        b = sum(1 for i, ok in right["alpha"].items() if ok and not right["beta"][i])
        c = sum(1 for i, ok in right["beta"].items() if ok and not right["alpha"][i])
        test = tests[column]
        assert test["test"] == "McNemar exact" and test["discordant"] == [b, c], column
        assert test["p"] == pytest.approx(binomial_two_sided(min(b, c), b + c))
    assert {tests[c]["test"] for c in ("prompt-robustness:yn:pdr", "prompt-spread:yn:spread")} == {
        "paired bootstrap"}
    rows = {row["model"]: row for row in csv.DictReader((study_dir / "leaderboard.csv").open())}
    for column in expected:
        assert {f"{column}_n", f"{column}_ci_low", f"{column}_differs_from"} <= rows["alpha"].keys()


def test_every_number_of_a_run_has_n_an_interval_and_outcomes_that_reproduce_it(study_dir: Path) -> None:
    for method in HEADLINES:
        run = load_run(study_dir / "alpha" / method / "yn")
        rates = run_rates(run)
        assert rates
        for rate in rates:
            if rate.num.value is None:
                continue
            assert rate.num.n and rate.num.ci is not None and rate.num.ci[0] < rate.num.ci[1], rate
            outcomes = run_outcomes(run, rate.metric, rate.num.value)
            assert outcomes is not None and outcomes.reproduces(), (method, rate.metric)
    # The template's own prompt is the same prompt in the perturb and the spread runs: the same outcomes.
    for model in MODELS:
        perturbed = decode(_summary(study_dir, model, "prompt-robustness"))
        spread = decode(_summary(study_dir, model, "prompt-spread"))
        assert perturbed is not None and spread is not None and perturbed["clean"] == spread["original"]


def _worst(summary: dict[str, Any]) -> str:
    """The changed prompt with the lowest accuracy (the first by name on a tie)."""
    return min((entry["acc"], name) for name, entry in summary["prompts"].items() if entry["changed"])[1]


def test_study_report_shows_the_worst_prompt_with_its_edits_marked(study_dir: Path, tmp_path: Path) -> None:
    with open_report(study_dir / "report.html", profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        assert page.locator("#prompt-robustness").count() == 1
        # The leaderboard's prompt-robustness numbers link to the section.
        links = page.eval_on_selector_all("#leaderboard td a", "as => as.map(a => a.getAttribute('href'))")
        assert links.count("#prompt-robustness") == 2 * sum(len(m) for m in HEADLINES.values())
        items = page.locator("#prompt-robustness-worst .items .item")
        assert items.count() == 2
        for model in MODELS:
            summary = _summary(study_dir, model, "prompt-robustness")
            worst = _worst(summary)
            item = page.locator("#prompt-robustness-worst .items .item", has_text=f"{worst} · {model}")
            assert item.count() == 1, (model, worst)
            edits = summary["prompts"][worst]["edits"]["instruction"]
            assert edits
            marked = item.locator("mark.rep").all_text_contents()
            assert marked == [e["replacement"] for e in sorted(edits, key=lambda e: e["start"])]
            removed = item.locator("mark.del").all_text_contents()
            assert removed == [e["original"] for e in sorted(edits, key=lambda e: e["start"])]
            texts = item.locator(".pair pre.text").all_text_contents()
            assert texts == [summary["clean_prompt"]["pieces"]["instruction"],
                             summary["prompts"][worst]["pieces"]["instruction"]]
        found = page.locator("#prompt-robustness-found .items .item")
        assert found.count() == 2
        search = _summary(study_dir, "alpha", "prompt-search")
        assert search["found_instruction"] in found.filter(has_text="alpha").inner_text()
        section = page.locator("#prompt-robustness").inner_text()
        assert "wins" in section and "format12" in section
        assert opened.errors == []


def test_runs_compare_latex_of_the_study_compiles(study_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tables.tex"
    assert main(["runs", "compare", str(study_dir), "--format", "latex", "--output", str(out)]) == 0
    latex = out.read_text(encoding="utf-8")
    for caption in ("Perturbed prompts", "Adversarial prompt search", "Prompt spread", "Study leaderboard",
                    "Pairwise tests: Perturbed prompts"):
        assert caption in latex, caption
    compile_tables(latex, tmp_path / "tex")
    assert main(["runs", "compare", str(study_dir)]) == 0
    printed = capsys.readouterr().out
    assert "Perturbed prompts: lower PDR ranks first" in printed and "Prompt spread" in printed
