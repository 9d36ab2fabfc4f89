"""A 2-model study's pairwise tests and its report: real tiny models, real runs, the report in real Chromium.

The math questions' gold answers are what the trained tiny model answers (``helpers.pairedruns``), so the paired
test has something to find. The expected McNemar p is computed here from the two runs' stored records.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import robusteval as rv
from helpers.browser import open_report
from helpers.pairedruns import MAX_NEW_TOKENS, answered_by
from helpers.runs import records
from helpers.studies import YESNO
from robusteval.cli.main import main
from robusteval.metrics.significance import binomial_two_sided, holm

N = 10


@pytest.fixture(scope="module")
def study_dir(tiny_trained_dir: Path, tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("significance")
    data = answered_by(tiny_trained_dir, root, N)
    study = root / "study.toml"
    study.write_text(
        f"""title = "alpha against beta"
batch_size = 4

[[models]]
name = "alpha"
spec = "hf:{tiny_trained_dir}"
device = "cpu"

[[models]]
name = "beta"
spec = "hf:{tiny_llama_dir}"
device = "cpu"

[datasets.mine]
dataset = "jsonl"
data_file = "{data}"

[datasets.yn]
dataset = "jsonl"
data_file = "{YESNO}"
answer_type = "label"
limit = 6

[methods.eval]
datasets = ["mine"]
max_new_tokens = {MAX_NEW_TOKENS}

[methods.robustness]
datasets = ["yn"]
sets = ["C-keyboard", "C-swap"]
""",
        encoding="utf-8",
    )
    result = rv.study(study)
    assert not result.failed
    return result.out


def _discordant(out: Path) -> tuple[int, int]:
    """(right in alpha only, right in beta only) from the two eval runs' stored records."""
    right = {
        model: {r["id"]: r["correct"] for r in records(out / model / "eval" / "mine", "answer_first")}
        for model in ("alpha", "beta")
    }
    assert right["alpha"].keys() == right["beta"].keys() and len(right["alpha"]) == N
    only_a = sum(1 for i, ok in right["alpha"].items() if ok and not right["beta"][i])
    only_b = sum(1 for i, ok in right["beta"].items() if ok and not right["alpha"][i])
    return only_a, only_b


def test_pairwise_tests_are_mcnemar_on_the_stored_records_holm_adjusted(
    study_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = json.loads((study_dir / "leaderboard.json").read_text())
    tests = {p["column"]: p for p in board["pairwise"]}
    assert set(tests) == {c["name"] for c in board["columns"]}  # every column, one pair each
    only_a, only_b = _discordant(study_dir)
    assert only_a >= 8, "alpha should be right where beta is not"
    acc = tests["eval:mine:acc"]
    assert (acc["model_a"], acc["model_b"], acc["test"]) == ("alpha", "beta", "McNemar exact")
    assert acc["discordant"] == [only_a, only_b] and acc["n_shared"] == N
    assert acc["p"] == pytest.approx(binomial_two_sided(only_b, only_a + only_b))
    tested = [p for p in board["pairwise"] if p["p"] is not None]
    assert [p["p_holm"] for p in tested] == pytest.approx(holm([p["p"] for p in tested]))
    assert acc["significant"] is True and acc["verdict"] == "differ: alpha better"
    cells = {(c["model"], c["column"]): c["value"] for c in board["cells"]}
    assert (
        acc["value_a"] == cells[("alpha", "eval:mine:acc")]
        and acc["value_b"] == cells[("beta", "eval:mine:acc")]
    )
    # Accuracies read "higher is better"; the RB-index "lower is more robust".
    reads = {c["name"]: c["reads"] for c in board["columns"]}
    assert (
        reads["eval:mine:acc"] == "higher is better"
        and reads["robustness:yn:acc@original"] == "higher is better"
    )
    assert reads["robustness:yn:rb_index"] == "lower is more robust"
    # leaderboard.csv names the model each differs from; pairwise.csv holds the same tests.
    rows = {row["model"]: row for row in csv.DictReader((study_dir / "leaderboard.csv").open())}
    assert rows["alpha"]["eval:mine:acc_differs_from"].startswith("beta (p_holm=")
    assert rows["beta"]["eval:mine:acc_differs_from"].startswith("alpha (p_holm=")
    pairs = list(csv.DictReader((study_dir / "pairwise.csv").open()))
    assert [(p["column"], float(p["p"]) if p["p"] else None) for p in pairs] == [
        (p["column"], p["p"]) for p in board["pairwise"]
    ]
    # The terminal: a resumed study prints the pairwise table under the leaderboard.
    assert main(["study", str(study_dir.parent / "study.toml")]) == 0
    printed = capsys.readouterr().out
    assert (
        "pairwise tests: which models differ on each number" in printed and "differ: alpha better" in printed
    )
    assert "McNemar exact, b=" in printed


def test_report_opens_with_the_leaderboard_and_its_pairwise_tests(study_dir: Path, tmp_path: Path) -> None:
    rows = {row["model"]: row for row in csv.DictReader((study_dir / "leaderboard.csv").open())}
    columns = [c["name"] for c in json.loads((study_dir / "leaderboard.json").read_text())["columns"]]
    with open_report(study_dir / "report.html", profile=tmp_path / "profile") as opened:
        page = opened.page
        sections = page.eval_on_selector_all("main > section", "s => s.map(e => e.id)")
        assert sections[0] == "leaderboard" and "evals" in sections
        first = page.locator("#leaderboard table").first
        assert first.locator("thead th").all_inner_texts() == ["number", "reads", "alpha", "beta"]
        body = first.locator("tbody tr")
        assert body.count() == len(columns)
        for i, column in enumerate(columns):
            cells = body.nth(i).locator("td")
            for j, model in enumerate(("alpha", "beta")):
                cell = cells.nth(2 + j)
                shown = cell.get_attribute("data-value")
                expected = rows[model][column]
                assert (float(shown) if shown else None) == (float(expected) if expected else None), (
                    column,
                    model,
                )
                if expected:
                    n = rows[model][f"{column}_n"]
                    assert f"n={n}" in cell.inner_text()
                    # Every number links to the section showing its run, and the link gets there.
                    href = cell.locator("a").get_attribute("href")
                    assert href and page.locator(href).count() == 1
        assert "higher is better" in body.nth(columns.index("eval:mine:acc")).inner_text()
        # Clicking a number scrolls to its run's section.
        body.nth(columns.index("eval:mine:acc")).locator("td a").first.click()
        assert page.evaluate("location.hash") == "#evals"
        assert page.locator("#evals").evaluate("e => e.getBoundingClientRect().top") < 50
        # The study's names everywhere: the eval section names alpha and beta, never the model folders.
        evals = page.locator("#evals").inner_text()
        assert (
            "alpha" in evals and "beta" in evals and "model" not in page.locator("#evals tbody").inner_text()
        )
        tests = page.locator("#leaderboard table").nth(1)
        assert "Pairwise tests" in page.locator("#leaderboard h4.caption").nth(1).inner_text()
        text = tests.inner_text()
        assert "McNemar exact" in text and "differ: alpha better" in text
        assert opened.errors == []
