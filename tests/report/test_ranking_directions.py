"""Rank order, tie-break and the printed "more robust" direction of the MATCHA leaderboards: ``runs compare``
(API, terminal, CSV) and the report's comparison section. Each assertion fails if the direction of UR (higher
first) or of the SR tie-break (lower first) were reversed, or the tie-break dropped: the runs are given in an
order that no reversed rule would turn into the expected one."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import robusteval as rv
from helpers.reportpage import Page
from helpers.reportstores import matcha_store
from helpers.runs import cli_inproc

#: The MATCHA leaderboard's title: its ranking direction in words.
TITLE = "MATCHA: higher UR (answer and reasoning survive) ranks first"
#: model -> outcomes of its 40 attacked questions: UR, then SR decide the order.
OUTCOMES = {
    "tied-more-broken": ["unsuccessful"] * 20 + ["success"] * 16 + ["wrong"] * 4,  # UR 50 %, SR 40 %
    "sturdiest": ["unsuccessful"] * 30 + ["success"] * 6 + ["wrong"] * 4,  # UR 75 %, SR 15 %
    "tied-less-broken": ["unsuccessful"] * 20 + ["success"] * 8 + ["wrong"] * 12,  # UR 50 %, SR 20 %
    "weakest": ["unsuccessful"] * 8 + ["success"] * 2 + ["wrong"] * 30,  # UR 20 %, SR 5 %
}
#: Best first: higher UR; at equal UR, lower SR.
EXPECTED = ["sturdiest", "tied-less-broken", "tied-more-broken", "weakest"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("directions")
    # Given in OUTCOMES' order: the tied pair comes more-broken first, so a sort without the SR tie-break (sorted
    # is stable) or with SR reversed keeps it first; weakest last, so UR reversed puts it first.
    return [matcha_store(root / name, 40, kinds=kinds, model_name=f"hf:{name}", seed=i)
            for i, (name, kinds) in enumerate(OUTCOMES.items())]


def test_runs_compare_ranks_higher_ur_first_then_lower_sr(runs: list[Path], tmp_path: Path) -> None:
    [board] = rv.compare_runs(runs)
    assert board.title == TITLE
    assert [(row["rank"], row["model"]) for row in board.rows] == [(str(i), m) for i, m in enumerate(EXPECTED, 1)]
    # The numbers behind the order, as the rows hold them.
    assert [(row["ur"].value, row["sr"].value) for row in board.rows] == [  # type: ignore[union-attr]
        (0.75, 0.15), (0.5, 0.2), (0.5, 0.4), (0.2, 0.05)]
    # The terminal prints the same order under the same words, and the CSV the same ranks.
    done = cli_inproc("runs", "compare", *map(str, runs))
    assert done.returncode == 0, done.stderr
    assert TITLE in done.stdout
    # the leaderboard, not the secondary view (among the judged) nor the tests under it
    board_text = done.stdout.split(f"{TITLE}: pairwise tests")[0].split("every attacked example by outcome")[0]
    lines = [line for line in board_text.splitlines() if any(f" {m} " in line for m in EXPECTED)]
    assert [next(m for m in EXPECTED if f" {m} " in line) for line in lines] == EXPECTED
    out = tmp_path / "board.csv"
    assert cli_inproc("runs", "compare", *map(str, runs), "--format", "csv", "--output", str(out)).returncode == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(row["rank"], row["model"]) for row in rows] == [(str(i), m) for i, m in enumerate(EXPECTED, 1)]


def test_the_report_comparison_section_ranks_as_runs_compare(runs: list[Path], tmp_path: Path) -> None:
    page = Page(rv.report(runs, out=tmp_path / "report.html").read_text(encoding="utf-8"))
    assert TITLE in page.captions
    shown = page.rows[TITLE]
    assert [(row[0], row[1]) for row in shown] == [(str(i), m) for i, m in enumerate(EXPECTED, 1)]
